#include "launch/process_launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "config/role_options.h"
#include "evaluate/checkpoint_weights.h"
#include "launch/process_control.h"
#include "launch/process_supervisor.h"
#include "launch/prometheus_targets.h"
#include "launch/run_monitor.h"
#include "learner/apex/weights_broadcaster.h"
#include "observe/metrics_http_server.h"
#include "replay/service/replay_sampler.h"
#include "rpc/broadcast.h"

namespace rlswarm::launch {
namespace fs = std::filesystem;
namespace {

// A port that was free a moment ago (the kernel's choice for port 0).
int PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Unavailable("cannot create a socket to pick a port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw Unavailable("cannot bind 127.0.0.1:0 to pick a port");
  return ntohs(addr.sin_port);
}

bool PortIsFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// `count` consecutive free ports, none of them in `taken` (publish_mode
// parts: learner rank r binds the weights ports + r).
int PickFreePorts(int count, const std::vector<int>& taken) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int first = PickFreePort();
    bool ok = first + count - 1 <= 65535;
    for (int p = first; ok && p < first + count; ++p) {
      ok = std::find(taken.begin(), taken.end(), p) == taken.end() && (p == first || PortIsFree(p));
    }
    if (ok) return first;
  }
  throw Unavailable("cannot find " + std::to_string(count) + " consecutive free ports");
}

std::string Loopback(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

// Progress of a processes-mode run, from what the processes expose: the
// actors' episode files (env steps = sum of finished episodes' lengths,
// training returns), replay's totals (rpc) and the weights version (=
// learner updates).
class ProcessProgress {
 public:
  ProcessProgress(const config::ExperimentConfig& config, const RunDirectory& run,
                  const rpc::SubscriberOptions& weights, ProcessSupervisor& supervisor,
                  std::int64_t earlier_steps)
      : run_(run), supervisor_(supervisor), earlier_steps_(earlier_steps), weights_(weights) {
    replay::ReplaySamplerOptions o =
        config.replay.ToSamplerOptions(config.security.ToClientOptions());
    o.timeout = std::chrono::milliseconds(300);
    sampler_ = std::make_unique<replay::ReplaySampler>(o);
    offsets_.resize(static_cast<std::size_t>(config.actor.num_actors), 0);
  }

  RunProgress Sample() {
    std::lock_guard lock(mu_);
    ReadEpisodes();
    RunProgress p;
    p.env_steps = earlier_steps_ + steps_;
    if (!recent_.empty()) {
      double sum = 0;
      for (double r : recent_) sum += r;
      p.train_return = sum / static_cast<double>(recent_.size());
    }
    p.updates = static_cast<std::int64_t>(weights_.version());
    try {
      replay::TableTotals sum;
      for (const replay::TableTotals& t : sampler_->Totals()) {
        sum.size += t.size;
        sum.inserted += t.inserted;
        sum.sampled += t.sampled;
      }
      replay_ = sum;
    } catch (const Error&) {
      // A shard is down (restarting): keep the last totals.
    }
    // Replay counts transitions as they arrive; the episode files only once
    // an episode ends (and a restarted shard may have lost its newest
    // items): the larger of the two is the closer count.
    p.env_steps = earlier_steps_ + std::max(steps_, replay_.inserted);
    p.replay_size = replay_.size;
    p.replay_inserted = replay_.inserted;
    p.replay_sampled = replay_.sampled;
    for (const ChildStatus& c : supervisor_.Status()) p.restarts += c.restarts;
    return p;
  }

 private:
  // Reads the lines appended to each actor's episode file since last time.
  void ReadEpisodes() {
    for (std::size_t k = 0; k < offsets_.size(); ++k) {
      std::ifstream in(run_.episodes() / ("actor-" + std::to_string(k) + ".jsonl"));
      if (!in) continue;
      in.seekg(offsets_[k]);
      std::string line;
      while (std::getline(in, line)) {
        if (in.eof()) break;  // a line still being written: read it next time
        offsets_[k] = in.tellg();
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("length") || !j.contains("return")) continue;
        steps_ += j["length"].get<std::int64_t>();
        recent_.push_back(j["return"].get<double>());
        if (recent_.size() > 100) recent_.pop_front();
      }
    }
  }

  const RunDirectory& run_;
  ProcessSupervisor& supervisor_;
  const std::int64_t earlier_steps_;
  rpc::Subscriber weights_;
  std::unique_ptr<replay::ReplaySampler> sampler_;
  std::mutex mu_;
  std::vector<std::streamoff> offsets_;
  std::int64_t steps_ = 0;
  std::deque<double> recent_;
  replay::TableTotals replay_;
};

// The newest learner checkpoint that loads, as weights of version = its
// update count.
std::optional<rpc::VersionedBlob> NewestCheckpointWeights(const config::ExperimentConfig& config) {
  std::vector<fs::path> dirs;
  std::error_code error;
  for (const auto& e : fs::directory_iterator(config.learner.checkpoint_dir, error)) {
    if (e.path().filename().string().rfind("update-", 0) == 0) dirs.push_back(e.path());
  }
  std::sort(dirs.rbegin(), dirs.rend());  // zero-padded names: newest first
  for (const fs::path& dir : dirs) {
    try {
      rpc::VersionedBlob blob;
      blob.payloads = evaluate::CheckpointWeights(dir.string());
      blob.version = std::stoull(dir.filename().string().substr(7));
      return blob;
    } catch (const std::exception& e) {
      spdlog::warn("skipping checkpoint {}: {}", dir.string(), e.what());
    }
  }
  return std::nullopt;
}

}  // namespace

RunSummary RunProcesses(config::ExperimentConfig config, const RunDirectory& run,
                        observe::ScalarLog& scalars, const RunSummary& earlier,
                        const sigset_t& stop_signals) {
  const std::string binary = fs::read_symlink("/proc/self/exe").string();
  const std::string config_file = run.config().string();
  const int ranks = static_cast<int>(config.launch.learner_ranks);

  // Fixed ports for the run, so restarts rebind them and peers reconnect.
  std::vector<std::string> replay_endpoints;
  for (int i = 0; i < config.replay.num_shards; ++i) {
    replay_endpoints.push_back(config.replay.endpoints.empty()
                                   ? Loopback(PickFreePort())
                                   : config.replay.endpoints[static_cast<std::size_t>(i)]);
  }
  config.replay.endpoints = replay_endpoints;
  std::string endpoints_list;
  for (const std::string& e : replay_endpoints) {
    endpoints_list += (endpoints_list.empty() ? "" : ", ") + ("\"" + e + "\"");
  }
  const int weights_port = PickFreePorts(ranks, {});
  std::vector<int> taken;
  for (int r = 0; r < ranks; ++r) taken.push_back(weights_port + r);
  const std::string weights = Loopback(weights_port);
  const std::string snapshot = Loopback(PickFreePorts(ranks, taken));
  const int master_port = PickFreePort();
  // publish_mode parts: every learner rank that holds a shard publishes its
  // part on the ports after these (learner/apex/weights_broadcaster.h) and the
  // actors and the evaluator follow them all; full: rank 0 alone.
  const bool parts = config.learner.publish_mode == "parts";
  const int publishers = parts && config.learner.strategy != "no_shard" ? ranks : 1;
  std::vector<std::string> weights_files;
  std::vector<rpc::SubscriberOptions> weights_subs;
  for (int r = 0; r < publishers; ++r) {
    std::string file = (run.endpoints() / "weights").string();
    if (r > 0) file += ".rank" + std::to_string(r);
    rpc::SubscriberOptions sub;
    sub.endpoint = learner::OffsetEndpointPort(weights, r);
    sub.snapshot_endpoint = learner::OffsetEndpointPort(snapshot, r);
    sub.security = config.security.ToClientOptions();
    sub.name = "evaluator-weights";
    WriteLinesAtomically(file, {sub.endpoint, sub.snapshot_endpoint});
    weights_files.push_back(file);
    weights_subs.push_back(sub);
  }
  WriteLinesAtomically((run.endpoints() / "replay").string(), replay_endpoints);
  const std::vector<std::string> common = {"replay.endpoints=[" + endpoints_list + "]",
                                           "learner.weights_endpoint=" + weights,
                                           "learner.weights_snapshot_endpoint=" + snapshot};

  SupervisorOptions supervision;
  supervision.initial_backoff =
      std::chrono::milliseconds(static_cast<std::int64_t>(config.launch.restart_backoff_s * 1000));
  supervision.max_backoff = std::chrono::milliseconds(
      static_cast<std::int64_t>(config.launch.restart_backoff_max_s * 1000));
  supervision.max_restarts = static_cast<int>(config.launch.max_restarts);
  supervision.stop_grace =
      std::chrono::milliseconds(static_cast<std::int64_t>(config.launch.stop_grace_s * 1000));
  ProcessSupervisor supervisor(supervision);
  // Every child serves its own /metrics (launch/role_metrics.h) when the
  // launcher does: launch.metrics_port 0 lets each pick a free port (a
  // restart may get another; the child writes its URL to its file and
  // prometheus_targets.json follows), a fixed port P gives the children
  // P+1, P+2, ... in the order they are added, rebound on restart.
  const bool metrics = config.launch.metrics_port >= 0;
  const int children = config.replay.num_shards + ranks + static_cast<int>(config.actor.num_actors);
  if (metrics && config.launch.metrics_port > 0 && config.launch.metrics_port + children > 65535) {
    throw config::ConfigError("launch.metrics_port " + std::to_string(config.launch.metrics_port) +
                              ": the " + std::to_string(children) +
                              " processes take the ports after it, past 65535");
  }
  std::vector<MetricsTarget> metrics_targets;
  const TargetLabels run_label = {{"run", run.name()}};
  if (metrics) {
    TargetLabels labels = {{"role", "launcher"}};
    labels.insert(labels.end(), run_label.begin(), run_label.end());
    metrics_targets.push_back({run.endpoints() / "metrics", labels});
  }
  auto child = [&](const std::string& name, std::vector<std::string> argv, const std::string& group,
                   int stage, TargetLabels labels) {
    argv.insert(argv.begin(), binary);
    argv.insert(argv.end(), common.begin(), common.end());
    if (metrics) {
      const fs::path url_file = run.endpoints() / ("metrics." + name);
      // A URL left by an earlier run of this directory (--resume) names a
      // dead port; the child writes its own once it serves.
      std::error_code ignored;
      fs::remove(url_file, ignored);
      // metrics_targets[0] is the launcher's, on metrics_port itself.
      const std::int64_t port =
          config.launch.metrics_port == 0
              ? 0
              : config.launch.metrics_port + static_cast<std::int64_t>(metrics_targets.size());
      argv.insert(argv.end(),
                  {"--metrics-port", std::to_string(port), "--metrics-bind",
                   config.launch.metrics_bind, "--metrics-endpoint-file", url_file.string()});
      labels.insert(labels.end(), run_label.begin(), run_label.end());
      metrics_targets.push_back({url_file, std::move(labels)});
    }
    ChildSpec spec;
    spec.name = name;
    spec.argv = std::move(argv);
    spec.log_file = (run.logs() / (name + ".log")).string();
    spec.group = group;
    spec.stop_stage = stage;
    supervisor.Add(std::move(spec));
  };
  for (int i = 0; i < config.replay.num_shards; ++i) {
    child("replay-" + std::to_string(i),
          {"replay", "--config", config_file, "--shard", std::to_string(i)}, "", 0,
          {{"role", "replay"}, {"shard", std::to_string(i)}});
  }
  for (int r = 0; r < ranks; ++r) {
    child("learner-" + std::to_string(r),
          {"learner", "--config", config_file, "--rank", std::to_string(r), "--local-rank",
           std::to_string(r), "--world-size", std::to_string(ranks), "--master-addr", "127.0.0.1",
           "--master-port", std::to_string(master_port)},
          "learner", 1, {{"role", "learner"}, {"rank", std::to_string(r)}});
  }
  for (std::int64_t k = 0; k < config.actor.num_actors; ++k) {
    std::vector<std::string> argv = {
        "actor",
        "--config",
        config_file,
        "--actor-id",
        std::to_string(k),
        "--metrics-file",
        (run.episodes() / ("actor-" + std::to_string(k) + ".jsonl")).string()};
    for (const std::string& file : weights_files) {
      argv.insert(argv.end(), {"--weights-endpoint-file", file});
    }
    // A resumed run's exploration continues where the earlier runs left it.
    if (const std::int64_t start = earlier.env_steps / config.actor.num_actors; start > 0) {
      argv.insert(argv.end(), {"--start-steps", std::to_string(start)});
    }
    child("actor-" + std::to_string(k), std::move(argv), "", 2,
          {{"role", "actor"}, {"actor", std::to_string(k)}});
  }
  std::mutex failed_mu;
  std::string failed;
  supervisor.on_exit = [](const std::string& name, const std::string& how,
                          std::chrono::milliseconds restart_in) {
    spdlog::warn("{} {}; restarting in {} ms", name, how, restart_in.count());
    // The terminal shows errors only (rpc clients warn about every lost
    // connection); a restart is worth a line there too.
    std::fprintf(stderr, "\nrlswarm launch: %s %s; restarting in %lld ms\n", name.c_str(),
                 how.c_str(), static_cast<long long>(restart_in.count()));
  };
  supervisor.on_give_up = [&](const std::string& name) {
    spdlog::error("{} crashed {} times in a row; giving up", name, config.launch.max_restarts + 1);
    std::lock_guard lock(failed_mu);
    if (failed.empty()) failed = name;
  };
  supervisor.Start();

  rpc::SubscriberOptions weights_sub;
  weights_sub.endpoint = weights;
  weights_sub.snapshot_endpoint = snapshot;
  weights_sub.security = config.security.ToClientOptions();
  weights_sub.name = "launcher-weights";
  ProcessProgress progress(config, run, weights_sub, supervisor, earlier.env_steps);

  RunMonitorOptions monitor_options;
  monitor_options.launch = config.launch;
  monitor_options.evaluator = config::MakeEvaluatorOptions(config);
  monitor_options.networks = config.ActingNetworks(/*with_critic=*/false);
  monitor_options.weights = weights_subs;
  monitor_options.mode = "processes";
  monitor_options.earlier = earlier;
  RunMonitor monitor(monitor_options, run, scalars, [&progress] { return progress.Sample(); });
  monitor.Start();
  const std::unique_ptr<observe::MetricsHttpServer> metrics_server =
      StartMetricsEndpoint(config.launch, run, monitor);
  std::optional<PrometheusTargets> targets;
  if (metrics) {
    targets.emplace(run.prometheus_targets(), metrics_targets);
    targets->Start();
  }
  spdlog::info("processes: {} replay shard(s), {} learner rank(s), {} actor(s); logs in {}",
               config.replay.num_shards, ranks, config.actor.num_actors, run.logs().string());

  const std::string stop_reason =
      monitor.WaitForStop(stop_signals, [&]() -> std::optional<std::string> {
        {
          std::lock_guard lock(failed_mu);
          if (!failed.empty()) return "failed: " + failed + " was given up";
        }
        for (const ChildStatus& c : supervisor.Status()) {
          if (c.name.rfind("learner-", 0) == 0 && !c.finished) return std::nullopt;
        }
        return "max_updates";  // every learner rank exited 0: learner.max_updates
      });
  spdlog::info("stopping: {}", stop_reason);
  supervisor.Stop();  // actors, then the learner (final checkpoint), then replay
  std::optional<rpc::VersionedBlob> final_weights = NewestCheckpointWeights(config);
  const std::int64_t final_updates =
      final_weights ? static_cast<std::int64_t>(final_weights->version) : 0;
  RunSummary summary = monitor.Finish(stop_reason, std::move(final_weights));
  // The learner's last checkpoint is newer than its last broadcast.
  summary.updates = std::max(summary.updates, final_updates);
  return summary;
}

}  // namespace rlswarm::launch
