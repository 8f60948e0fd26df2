#pragma once

// The memory a learner rank really used at its peak, to set beside the peak
// ShardedModel computes from its buffers (state + gathered parameters + the
// largest unit's gradient): allocator overhead, autograd's saved tensors,
// activations and whatever else the computed figure leaves out show here.
//
// On the CPU the figure is the process's resident high-water mark (VmHWM in
// /proc/self/status) above its resident size at Reset(). A high-water mark
// only rises, so Reset() lowers it to the current resident size through
// /proc/self/clear_refs ("5", Linux >= 4.0); where that write fails the
// mark keeps any earlier peak, and only a process measured from its start
// (one process per case) gets a true figure: ResetsHighWaterMark() says
// which. The figure is the whole process's: every thread's allocations
// count (Gloo's, the replay feed's).
//
// On CUDA (RLSWARM_WITH_CUDA builds, device cuda:N) it is the caching
// allocator's peak of allocated bytes on that device above those allocated
// at Reset(); memory the allocator keeps reserved but unused is not counted.
// A meter may be built before anything else touched CUDA: it initialises
// CUDA (and with it the allocator's statistics) itself.
//
// Not thread-safe: one thread owns a meter. Reset() on the CPU changes the
// process-wide high-water mark that every other meter in the process reads.

#include <c10/core/Device.h>

#include <cstdint>

namespace rlswarm::learner {

class PeakMemoryMeter {
 public:
  // Takes the baseline now (as Reset()).
  explicit PeakMemoryMeter(c10::Device device = c10::kCPU);

  // Makes now the baseline: on the CPU returns freed heap memory to the OS
  // first (malloc_trim), since an allocation that reuses pages already
  // resident raises no high-water mark, then resets the mark to the current
  // resident size. On CUDA resets the allocator's peak statistics.
  void Reset();

  // The most memory in use at once since Reset(), minus what was in use at
  // Reset(); >= 0.
  int64_t PeakBytesAboveBaseline() const;

  // Whether Reset() could lower the high-water mark (always true on CUDA).
  bool ResetsHighWaterMark() const { return resets_high_water_mark_; }
  int64_t baseline_bytes() const { return baseline_bytes_; }

 private:
  c10::Device device_;
  int64_t baseline_bytes_ = 0;
  bool resets_high_water_mark_ = false;
};

// VmRSS and VmHWM of this process in bytes; 0 where /proc is unreadable.
int64_t ResidentBytes();
int64_t ResidentHighWaterMarkBytes();

}  // namespace rlswarm::learner
