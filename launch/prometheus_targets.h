#pragma once

// prometheus_targets.json: the run's metrics endpoints as a Prometheus
// file-based service discovery file (a scrape config's file_sd_configs: a
// JSON list of target groups, each a list of host:port and their labels):
//
//   [{"targets": ["127.0.0.1:41235"],
//     "labels": {"role": "replay", "shard": "0", "run": "cartpole-20261130-100000"}},
//    ...]
//
// one group per endpoint whose URL is known, in the order given. Each
// process writes its own URL to a file when it serves (the launcher to
// endpoints/metrics, a child to endpoints/metrics.<name>); PrometheusTargets
// reads those files and rewrites the SD file atomically (temp file and
// rename, which Prometheus' file watcher sees as one change) whenever the
// listing changes: a child restarted on another port (launch.metrics_port
// 0) shows up within one poll. A child that died keeps its last entry until
// its next start rewrites it, so Prometheus records it as down (up == 0).
//
// Thread-safety: Refresh() may be called from any thread; Start() and the
// destructor from the owning thread.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"

namespace rlswarm::launch {

using TargetLabels = std::vector<std::pair<std::string, std::string>>;

// One endpoint of the run: where its URL appears, and its target labels.
struct MetricsTarget {
  std::filesystem::path url_file;
  TargetLabels labels;
};

// "http://127.0.0.1:9100/metrics" -> "127.0.0.1:9100" (the host:port a
// target is written as); nullopt for anything else.
std::optional<std::string> ScrapeAddress(const std::string& url);

// The SD file's JSON for `groups` of (host:port, labels), in order.
std::string FileSdJson(const std::vector<std::pair<std::string, TargetLabels>>& groups);

class PrometheusTargets {
 public:
  // Writes nothing yet. `poll`: how often the polling thread (Start())
  // looks at the URL files.
  PrometheusTargets(std::filesystem::path sd_file, std::vector<MetricsTarget> targets,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  // Stops and joins the polling thread; leaves the SD file in place.
  ~PrometheusTargets();
  PrometheusTargets(const PrometheusTargets&) = delete;
  PrometheusTargets& operator=(const PrometheusTargets&) = delete;

  // Reads every URL file and, when the listing differs from the one last
  // written (or nothing was written yet), writes the SD file. Returns true
  // when it wrote. Throws Unavailable when the file cannot be written.
  bool Refresh() RLSWARM_EXCLUDES(mu_);
  // Refresh()es now, then every `poll` on a thread of its own (a failed
  // write there is logged and retried at the next poll).
  void Start();

 private:
  const std::filesystem::path sd_file_;
  const std::vector<MetricsTarget> targets_;
  const std::chrono::milliseconds poll_;
  Mutex mu_;
  std::optional<std::string> written_ RLSWARM_GUARDED_BY(mu_);  // the JSON last written
  bool stop_ RLSWARM_GUARDED_BY(mu_) = false;
  CondVar cv_;
  std::thread thread_;
};

}  // namespace rlswarm::launch
