#include "learner/dist/trace_recorder.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"

#ifdef RLSWARM_WITH_CUDA
// Header-only (nvtx3 in the CUDA toolkit); loads a tool only when one is
// attached (Nsight Systems), otherwise every call is a no-op.
#include <nvtx3/nvToolsExt.h>
#endif

namespace rlswarm::learner {

std::atomic<bool> TraceRecorder::enabled_{false};
std::atomic<bool> TraceRecorder::nvtx_ranges_{false};

TraceRecorder& TraceRecorder::Global() {
  static TraceRecorder* recorder = new TraceRecorder();  // never destroyed: hooks run late
  return *recorder;
}

int64_t TraceRecorder::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void TraceRecorder::Start(int rank, int64_t origin_ns) {
  MutexLock lock(mu_);
  events_.clear();
  rank_ = rank;
  origin_ns_ = origin_ns;
  enabled_.store(true);
}

void TraceRecorder::Stop() { enabled_.store(false); }

void TraceRecorder::Record(TraceEvent event) {
  if (!Enabled()) return;
  MutexLock lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<TraceEvent> TraceRecorder::Events() const {
  MutexLock lock(mu_);
  return events_;
}

std::string TraceRecorder::ToChromeJson() const {
  std::vector<TraceEvent> events;
  int rank = 0;
  int64_t origin = 0;
  {
    MutexLock lock(mu_);
    events = events_;
    rank = rank_;
    origin = origin_ns_;
  }
  std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns < b.start_ns;
  });
  // Tracks: compute is tid 0; each collective kind gets a block of tids,
  // one per lane. A span takes the first lane of its kind that is free at
  // its start (interval partitioning), so spans on one tid never overlap.
  std::map<std::string, int> kind_base;
  std::map<std::string, std::vector<int64_t>>
      lane_free_at;  // per kind: end of each lane's last span
  auto base_of = [&](const std::string& kind) {
    auto it = kind_base.find(kind);
    if (it != kind_base.end()) return it->second;
    const int base = 100 * (static_cast<int>(kind_base.size()) + 1);
    kind_base.emplace(kind, base);
    return base;
  };
  nlohmann::json out = nlohmann::json::array();
  std::map<int, std::string> track_names = {{0, "compute"}};
  for (const TraceEvent& e : events) {
    int tid = 0;
    if (e.track != "compute") {
      std::vector<int64_t>& lanes = lane_free_at[e.track];
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > e.start_ns) ++lane;
      if (lane == lanes.size()) lanes.push_back(0);
      lanes[lane] = e.end_ns;
      tid = base_of(e.track) + static_cast<int>(lane);
      track_names[tid] = e.track + " " + std::to_string(lane);
    }
    nlohmann::json args = nlohmann::json::object();
    for (const auto& [key, value] : e.args) args[key] = value;
    out.push_back({{"name", e.name},
                   {"cat", e.category},
                   {"ph", "X"},
                   {"ts", 1e-3 * static_cast<double>(e.start_ns - origin)},
                   {"dur", 1e-3 * static_cast<double>(std::max<int64_t>(0, e.end_ns - e.start_ns))},
                   {"pid", rank},
                   {"tid", tid},
                   {"args", args}});
  }
  out.push_back({{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", rank},
                 {"tid", 0},
                 {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (const auto& [tid, name] : track_names) {
    out.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", rank},
                   {"tid", tid},
                   {"args", {{"name", name}}}});
  }
  return nlohmann::json{{"traceEvents", out}, {"displayTimeUnit", "ms"}}.dump();
}

std::string MergeChromeTraces(const std::vector<std::string>& parts) {
  nlohmann::json events = nlohmann::json::array();
  for (const std::string& part : parts) {
    nlohmann::json j = nlohmann::json::parse(part, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array()) {
      throw InvalidArgument("MergeChromeTraces: a part is not a Chrome trace");
    }
    for (auto& e : j["traceEvents"]) events.push_back(std::move(e));
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

void TraceSpan::Begin(std::string name, std::string category, std::string track) {
  if (!TraceRecorder::Active()) return;
  BeginAt(TraceRecorder::NowNs(), std::move(name), std::move(category), std::move(track));
}

void TraceSpan::BeginAt(int64_t start_ns, std::string name, std::string category,
                        std::string track) {
  active_ = TraceRecorder::Active();
  if (!active_) return;
  event_.start_ns = start_ns;
#ifdef RLSWARM_WITH_CUDA
  nvtx_ = TraceRecorder::NvtxRanges();
  if (nvtx_) nvtx_range_ = nvtxRangeStartA(name.c_str());
#endif
  event_.name = std::move(name);
  event_.category = std::move(category);
  event_.track = std::move(track);
}

void TraceSpan::End(std::vector<std::pair<std::string, int64_t>> args) {
  if (active_) EndAt(TraceRecorder::NowNs(), std::move(args));
}

void TraceSpan::EndAt(int64_t end_ns, std::vector<std::pair<std::string, int64_t>> args) {
  if (!active_) return;
  active_ = false;
#ifdef RLSWARM_WITH_CUDA
  if (nvtx_) nvtxRangeEnd(nvtx_range_);
#endif
  event_.end_ns = end_ns;
  event_.args = std::move(args);
  TraceRecorder::Global().Record(std::move(event_));
}

TraceScope::TraceScope(const char* name) {
  if (TraceRecorder::Active()) Begin(name);
}

TraceScope::TraceScope(const char* prefix, const std::string& suffix) {
  if (TraceRecorder::Active()) Begin(prefix + suffix);
}

void TraceScope::Begin(std::string name) {
#ifdef RLSWARM_WITH_CUDA
  if (TraceRecorder::NvtxRanges()) {
    nvtxRangePushA(name.c_str());
    nvtx_ = true;
  }
#endif
  recording_ = TraceRecorder::Enabled();
  if (!recording_) return;
  event_.name = std::move(name);
  event_.category = "compute";
  event_.start_ns = TraceRecorder::NowNs();
}

TraceScope::~TraceScope() {
#ifdef RLSWARM_WITH_CUDA
  if (nvtx_) nvtxRangePop();
#endif
  if (!recording_) return;
  event_.end_ns = TraceRecorder::NowNs();
  TraceRecorder::Global().Record(std::move(event_));
}

}  // namespace rlswarm::learner
