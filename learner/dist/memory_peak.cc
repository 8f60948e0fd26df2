#include "learner/dist/memory_peak.h"

#include <malloc.h>
#include <torch/csrc/api/include/torch/version.h>

#include <algorithm>
#include <fstream>
#include <string>

#ifdef RLSWARM_WITH_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace rlswarm::learner {
namespace {

// A "Name:   1234 kB" line of /proc/self/status, in bytes.
int64_t StatusBytes(const std::string& name) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = name + ":";
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

#ifdef RLSWARM_WITH_CUDA
// StatType::AGGREGATE is index 0 in LibTorch 1.13 and 2.x alike (its
// namespace moved between them).
constexpr size_t kAggregate = 0;

int64_t CudaAllocatedBytes(int device, bool peak) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  const auto& s = stats.allocated_bytes[kAggregate];
  return peak ? s.peak : s.current;
}
#endif

}  // namespace

int64_t ResidentBytes() { return StatusBytes("VmRSS"); }
int64_t ResidentHighWaterMarkBytes() { return StatusBytes("VmHWM"); }

PeakMemoryMeter::PeakMemoryMeter(c10::Device device) : device_(device) { Reset(); }

void PeakMemoryMeter::Reset() {
#ifdef RLSWARM_WITH_CUDA
  if (device_.is_cuda()) {
    // The caching allocator has no per-device state until CUDA is
    // initialised (lazily, at the first CUDA allocation); before that its
    // statistics calls throw "Allocator not initialized for device". A
    // meter may be the first CUDA user of its process.
#if TORCH_VERSION_MAJOR >= 2
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
    at::globalContext().lazyInitCUDA();
#endif
    if (!device_.has_index()) device_ = c10::Device(c10::kCUDA, c10::cuda::current_device());
    c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
    baseline_bytes_ = CudaAllocatedBytes(device_.index(), /*peak=*/false);
    resets_high_water_mark_ = true;
    return;
  }
#endif
  malloc_trim(0);
  // "5" resets VmHWM to the current VmRSS (Documentation/filesystems/proc.rst).
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  resets_high_water_mark_ = static_cast<bool>(clear_refs);
  baseline_bytes_ = ResidentBytes();
}

int64_t PeakMemoryMeter::PeakBytesAboveBaseline() const {
#ifdef RLSWARM_WITH_CUDA
  if (device_.is_cuda()) {
    return std::max<int64_t>(0,
                             CudaAllocatedBytes(device_.index(), /*peak=*/true) - baseline_bytes_);
  }
#endif
  return std::max<int64_t>(0, ResidentHighWaterMarkBytes() - baseline_bytes_);
}

}  // namespace rlswarm::learner
