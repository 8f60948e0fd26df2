#pragma once

// A timeline of one learner update as Chrome trace JSON (the Trace Event
// Format that Perfetto and chrome://tracing open): compute spans (each
// unit's forward and backward, loss, backward, optimizer step) on the
// issuing thread's track, and every collective from issue to completion on
// tracks of its own (one per kind: all-gather, reduce-scatter, all-reduce,
// with as many lanes as there were in flight at once), named with its unit
// and kind, its bytes in `args`. The rank is the pid.
//
// Off and free when not tracing: every hook first reads one relaxed atomic
// (TraceRecorder::Active) and registers no hook, builds no name, takes no
// lock and reads no clock while it is false. In CUDA builds
// (RLSWARM_WITH_CUDA) the same spans can also be NVTX ranges, for Nsight
// Systems: only when asked for (SetNvtxRanges, `rlswarm learner --nvtx`),
// since every range costs a name and a hook per unit even where no tool
// listens. Active() = recording or NVTX ranges asked for.
//
// Times are steady_clock nanoseconds; the JSON gives microseconds since
// Start(). Ranks that call Start() right after one collective barrier
// (trace_update.h) share a time line to within that barrier's skew.
//
// Thread-safe: Record() may run on any thread (the autograd engine's,
// a backend's completion callback) while another thread Starts or Stops.

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"

namespace rlswarm::learner {

struct TraceEvent {
  std::string name;      // "forward fc0", "all-gather of unit 'fc0'"
  std::string category;  // "compute", "wait", "collective"
  // The track: "compute" (the thread that drives the model), or the
  // collective's kind ("all-gather", "reduce-scatter", "all-reduce").
  std::string track = "compute";
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<std::pair<std::string, int64_t>> args;  // e.g. {"bytes", 4096}
};

class TraceRecorder {
 public:
  // The process's recorder (the hooks in communicator.cc, gathered_units.cc
  // and sharded_model.cc record here).
  static TraceRecorder& Global();
  static bool Enabled() { return enabled_.load(std::memory_order_relaxed); }
  // Enabled(), or NVTX ranges were asked for in a CUDA build.
  static bool Active() {
    return Enabled() || (kNvtxBuilt && nvtx_ranges_.load(std::memory_order_relaxed));
  }
  // Emit every span as an NVTX range too, recording or not. Has no effect
  // in a build without CUDA (no NVTX there).
  static void SetNvtxRanges(bool on) { nvtx_ranges_.store(on); }
  static bool NvtxRanges() { return kNvtxBuilt && nvtx_ranges_.load(); }
  static int64_t NowNs();  // steady_clock

  // Drops what was recorded and records from now on, as `rank`; `origin_ns`
  // (default: now) is the trace's time 0.
  void Start(int rank, int64_t origin_ns = NowNs());
  // Stops recording; what was recorded stays until the next Start().
  void Stop();
  // Keeps `event` if recording; otherwise drops it.
  void Record(TraceEvent event);
  std::vector<TraceEvent> Events() const;
  // The recorded events as a Trace Event Format object: {"traceEvents":
  // [...]} with "X" (complete) events, ts and dur in microseconds since
  // Start(), pid = rank, and "M" metadata events naming the process
  // ("rank r") and every track. tid 0 is the compute track; collectives of
  // one kind that overlap in time get one tid each (lanes), so that every
  // track holds properly nested spans.
  std::string ToChromeJson() const;

 private:
#ifdef RLSWARM_WITH_CUDA
  static constexpr bool kNvtxBuilt = true;
#else
  static constexpr bool kNvtxBuilt = false;
#endif
  static std::atomic<bool> enabled_;
  static std::atomic<bool> nvtx_ranges_;
  mutable Mutex mu_;
  std::vector<TraceEvent> events_ RLSWARM_GUARDED_BY(mu_);
  int rank_ RLSWARM_GUARDED_BY(mu_) = 0;
  int64_t origin_ns_ RLSWARM_GUARDED_BY(mu_) = 0;
};

// Merges per-rank ToChromeJson() outputs into one trace (their events side
// by side: each rank is already its own pid). Throws InvalidArgument on a
// part that is not a trace.
std::string MergeChromeTraces(const std::vector<std::string>& parts);

// A span that may begin and end in different scopes or threads (a unit's
// backward, a collective): Begin() where it starts, End() where it ends.
// Inactive (and free) when TraceRecorder::Active() was false at Begin().
class TraceSpan {
 public:
  TraceSpan() = default;
  // `name` is only built by the caller when Active().
  void Begin(std::string name, std::string category = "compute", std::string track = "compute");
  // Begin() at an earlier time (a collective starts when it was issued).
  void BeginAt(int64_t start_ns, std::string name, std::string category, std::string track);
  void End(std::vector<std::pair<std::string, int64_t>> args = {});
  // End() with these times instead of now (a collective ends when its
  // backend completed it, which may be before the wait returned).
  void EndAt(int64_t end_ns, std::vector<std::pair<std::string, int64_t>> args = {});
  bool active() const { return active_; }
  const std::string& name() const { return event_.name; }

 private:
  TraceEvent event_;
  uint64_t nvtx_range_ = 0;
  bool nvtx_ = false;
  bool active_ = false;
};

// A compute span for the current scope, on the calling thread's track (and
// an NVTX push/pop range when NVTX ranges are on). `name` is read only when Active().
class TraceScope {
 public:
  explicit TraceScope(const char* name);
  TraceScope(const char* prefix, const std::string& suffix);  // "forward " + unit
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  void Begin(std::string name);
  TraceEvent event_;
  bool recording_ = false;
  bool nvtx_ = false;
};

}  // namespace rlswarm::learner
