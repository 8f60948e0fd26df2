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
#include <nlohmann/json.hpp>

#include "common/free_ports.h"
#include "common/thread_annotations.h"
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

  RunProgress Sample() RLSWARM_EXCLUDES(mu_) {
    MutexLock lock(mu_);
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
  void ReadEpisodes() RLSWARM_REQUIRES(mu_) {
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
  // Sample() may be called from the monitor's evaluator thread and from
  // Tick()'s at once.
  Mutex mu_;
  std::vector<std::streamoff> offsets_ RLSWARM_GUARDED_BY(mu_);
  std::int64_t steps_ RLSWARM_GUARDED_BY(mu_) = 0;
  std::deque<double> recent_ RLSWARM_GUARDED_BY(mu_);
  replay::TableTotals replay_ RLSWARM_GUARDED_BY(mu_);
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

// The first child the supervisor gave up on: noted by the supervisor's
// thread, read by the launcher's. Thread-safe.
class FirstGivenUp {
 public:
  void Note(const std::string& name) RLSWARM_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (name_.empty()) name_ = name;
  }
  // Empty until a child was given up.
  std::string name() const RLSWARM_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return name_;
  }

 private:
  mutable Mutex mu_;
  std::string name_ RLSWARM_GUARDED_BY(mu_);
};

// The run's endpoints, picked once per run, so that a restarted replay shard
// or learner binds the same port and its peers simply reconnect.
struct RunEndpoints {
  std::vector<std::string> replay;  // shard i's
  std::string weights;              // learner rank 0's publisher
  std::string snapshot;             // and its snapshot server
  int master_port = 0;              // the learner group's rendezvous
  // Per weights publisher: the file naming its endpoints (for the actors),
  // and the evaluator's subscription to it.
  std::vector<std::string> weights_files;
  std::vector<rpc::SubscriberOptions> weights_subs;
  // The config overrides every child gets.
  std::vector<std::string> overrides;
};

// Picks the ports, points config.replay.endpoints at the shards' and writes
// the endpoint files of `run`.
RunEndpoints PickEndpoints(config::ExperimentConfig& config, const RunDirectory& run, int ranks) {
  RunEndpoints e;
  for (int i = 0; i < config.replay.num_shards; ++i) {
    e.replay.push_back(config.replay.endpoints.empty()
                           ? Loopback(PickFreePort())
                           : config.replay.endpoints[static_cast<std::size_t>(i)]);
  }
  config.replay.endpoints = e.replay;
  std::string endpoints_list;
  for (const std::string& endpoint : e.replay) {
    endpoints_list += (endpoints_list.empty() ? "" : ", ") + ("\"" + endpoint + "\"");
  }
  const int weights_port = PickFreePorts(ranks, {});
  std::vector<int> taken;
  for (int r = 0; r < ranks; ++r) taken.push_back(weights_port + r);
  e.weights = Loopback(weights_port);
  e.snapshot = Loopback(PickFreePorts(ranks, taken));
  e.master_port = PickFreePort();
  // publish_mode parts: every learner rank that holds a shard publishes its
  // part on the ports after these (learner/apex/weights_broadcaster.h) and the
  // actors and the evaluator follow them all; full: rank 0 alone.
  const bool parts = config.learner.publish_mode == "parts";
  const int publishers = parts && config.learner.strategy != "no_shard" ? ranks : 1;
  for (int r = 0; r < publishers; ++r) {
    std::string file = (run.endpoints() / "weights").string();
    if (r > 0) file += ".rank" + std::to_string(r);
    rpc::SubscriberOptions sub;
    sub.endpoint = learner::OffsetEndpointPort(e.weights, r);
    sub.snapshot_endpoint = learner::OffsetEndpointPort(e.snapshot, r);
    sub.security = config.security.ToClientOptions();
    sub.name = "evaluator-weights";
    WriteLinesAtomically(file, {sub.endpoint, sub.snapshot_endpoint});
    e.weights_files.push_back(file);
    e.weights_subs.push_back(sub);
  }
  WriteLinesAtomically((run.endpoints() / "replay").string(), e.replay);
  e.overrides = {"replay.endpoints=[" + endpoints_list + "]",
                 "learner.weights_endpoint=" + e.weights,
                 "learner.weights_snapshot_endpoint=" + e.snapshot};
  return e;
}

SupervisorOptions Supervision(const config::LaunchSection& launch) {
  SupervisorOptions o;
  o.initial_backoff =
      std::chrono::milliseconds(static_cast<std::int64_t>(launch.restart_backoff_s * 1000));
  o.max_backoff =
      std::chrono::milliseconds(static_cast<std::int64_t>(launch.restart_backoff_max_s * 1000));
  o.max_restarts = static_cast<int>(launch.max_restarts);
  o.stop_grace = std::chrono::milliseconds(static_cast<std::int64_t>(launch.stop_grace_s * 1000));
  return o;
}

// Adds the run's roles to a supervisor, each child with the run's overrides
// and, when the launcher serves metrics, its own /metrics flags; collects
// the Prometheus targets (the launcher's first).
class RoleChildren {
 public:
  // `binary`: what every child runs (this launcher's own executable).
  // Throws ConfigError when a fixed launch.metrics_port leaves no room for
  // the children's ports.
  RoleChildren(const config::ExperimentConfig& config, const RunDirectory& run,
               const RunEndpoints& endpoints, std::string binary, ProcessSupervisor& supervisor)
      : config_(config),
        run_(run),
        endpoints_(endpoints),
        supervisor_(supervisor),
        binary_(std::move(binary)),
        metrics_(config.launch.metrics_port >= 0),
        run_label_{{"run", run.name()}} {
    // Every child serves its own /metrics (launch/role_metrics.h) when the
    // launcher does: launch.metrics_port 0 lets each pick a free port (a
    // restart may get another; the child writes its URL to its file and
    // prometheus_targets.json follows), a fixed port P gives the children
    // P+1, P+2, ... in the order they are added, rebound on restart.
    const int children = config.replay.num_shards + static_cast<int>(config.launch.learner_ranks) +
                         static_cast<int>(config.actor.num_actors);
    if (metrics_ && config.launch.metrics_port > 0 &&
        config.launch.metrics_port + children > 65535) {
      throw config::ConfigError(
          "launch.metrics_port " + std::to_string(config.launch.metrics_port) + ": the " +
          std::to_string(children) + " processes take the ports after it, past 65535");
    }
    if (metrics_) {
      TargetLabels labels = {{"role", "launcher"}};
      labels.insert(labels.end(), run_label_.begin(), run_label_.end());
      targets_.push_back({run.endpoints() / "metrics", labels});
    }
  }

  // replay-<i> (stop stage 0), learner-<r> (1, one group), actor-<k> (2).
  void AddAll(const RunSummary& earlier) {
    const std::string config_file = run_.config().string();
    const int ranks = static_cast<int>(config_.launch.learner_ranks);
    for (int i = 0; i < config_.replay.num_shards; ++i) {
      Add("replay-" + std::to_string(i),
          {"replay", "--config", config_file, "--shard", std::to_string(i)}, "", 0,
          {{"role", "replay"}, {"shard", std::to_string(i)}});
    }
    for (int r = 0; r < ranks; ++r) {
      Add("learner-" + std::to_string(r),
          {"learner", "--config", config_file, "--rank", std::to_string(r), "--local-rank",
           std::to_string(r), "--world-size", std::to_string(ranks), "--master-addr", "127.0.0.1",
           "--master-port", std::to_string(endpoints_.master_port)},
          "learner", 1, {{"role", "learner"}, {"rank", std::to_string(r)}});
    }
    for (std::int64_t k = 0; k < config_.actor.num_actors; ++k) {
      std::vector<std::string> argv = {
          "actor",
          "--config",
          config_file,
          "--actor-id",
          std::to_string(k),
          "--metrics-file",
          (run_.episodes() / ("actor-" + std::to_string(k) + ".jsonl")).string()};
      for (const std::string& file : endpoints_.weights_files) {
        argv.insert(argv.end(), {"--weights-endpoint-file", file});
      }
      // A resumed run's exploration continues where the earlier runs left it.
      if (const std::int64_t start = earlier.env_steps / config_.actor.num_actors; start > 0) {
        argv.insert(argv.end(), {"--start-steps", std::to_string(start)});
      }
      Add("actor-" + std::to_string(k), std::move(argv), "", 2,
          {{"role", "actor"}, {"actor", std::to_string(k)}});
    }
  }

  bool metrics() const { return metrics_; }
  const std::vector<MetricsTarget>& targets() const { return targets_; }

 private:
  void Add(const std::string& name, std::vector<std::string> argv, const std::string& group,
           int stage, TargetLabels labels) {
    argv.insert(argv.begin(), binary_);
    argv.insert(argv.end(), endpoints_.overrides.begin(), endpoints_.overrides.end());
    if (metrics_) {
      const fs::path url_file = run_.endpoints() / ("metrics." + name);
      // A URL left by an earlier run of this directory (--resume) names a
      // dead port; the child writes its own once it serves.
      std::error_code ignored;
      fs::remove(url_file, ignored);
      // targets_[0] is the launcher's, on metrics_port itself.
      const std::int64_t port =
          config_.launch.metrics_port == 0
              ? 0
              : config_.launch.metrics_port + static_cast<std::int64_t>(targets_.size());
      argv.insert(argv.end(),
                  {"--metrics-port", std::to_string(port), "--metrics-bind",
                   config_.launch.metrics_bind, "--metrics-endpoint-file", url_file.string()});
      labels.insert(labels.end(), run_label_.begin(), run_label_.end());
      targets_.push_back({url_file, std::move(labels)});
    }
    ChildSpec spec;
    spec.name = name;
    spec.argv = std::move(argv);
    spec.log_file = (run_.logs() / (name + ".log")).string();
    spec.group = group;
    spec.stop_stage = stage;
    supervisor_.Add(std::move(spec));
  }

  const config::ExperimentConfig& config_;
  const RunDirectory& run_;
  const RunEndpoints& endpoints_;
  ProcessSupervisor& supervisor_;
  const std::string binary_;
  const bool metrics_;
  const TargetLabels run_label_;
  std::vector<MetricsTarget> targets_;
};

// Logs a child's crash, on the terminal too: it shows errors only (rpc
// clients warn about every lost connection), and a restart is worth a line.
void ReportRestart(const std::string& name, const std::string& how,
                   std::chrono::milliseconds restart_in) {
  spdlog::warn("{} {}; restarting in {} ms", name, how, restart_in.count());
  std::fprintf(stderr, "\nrlswarm launch: %s %s; restarting in %lld ms\n", name.c_str(),
               how.c_str(), static_cast<long long>(restart_in.count()));
}

}  // namespace

RunSummary RunProcesses(config::ExperimentConfig config, const RunDirectory& run,
                        observe::ScalarLog& scalars, const RunSummary& earlier,
                        const sigset_t& stop_signals) {
  std::string binary = fs::read_symlink("/proc/self/exe").string();
  const int ranks = static_cast<int>(config.launch.learner_ranks);
  // Fixed ports for the run, so restarts rebind them and peers reconnect.
  const RunEndpoints endpoints = PickEndpoints(config, run, ranks);
  ProcessSupervisor supervisor(Supervision(config.launch));
  RoleChildren children(config, run, endpoints, std::move(binary), supervisor);
  children.AddAll(earlier);
  FirstGivenUp given_up;
  supervisor.on_exit = ReportRestart;
  supervisor.on_give_up = [&](const std::string& name) {
    spdlog::error("{} crashed {} times in a row; giving up", name, config.launch.max_restarts + 1);
    given_up.Note(name);
  };
  supervisor.Start();

  rpc::SubscriberOptions weights_sub;
  weights_sub.endpoint = endpoints.weights;
  weights_sub.snapshot_endpoint = endpoints.snapshot;
  weights_sub.security = config.security.ToClientOptions();
  weights_sub.name = "launcher-weights";
  ProcessProgress progress(config, run, weights_sub, supervisor, earlier.env_steps);

  RunMonitorOptions monitor_options;
  monitor_options.launch = config.launch;
  monitor_options.evaluator = config::MakeEvaluatorOptions(config);
  monitor_options.networks = config.ActingNetworks(/*with_critic=*/false);
  monitor_options.weights = endpoints.weights_subs;
  monitor_options.mode = "processes";
  monitor_options.earlier = earlier;
  RunMonitor monitor(monitor_options, run, scalars, [&progress] { return progress.Sample(); });
  monitor.Start();
  const std::unique_ptr<observe::MetricsHttpServer> metrics_server =
      StartMetricsEndpoint(config.launch, run, monitor);
  std::optional<PrometheusTargets> targets;
  if (children.metrics()) {
    targets.emplace(run.prometheus_targets(), children.targets());
    targets->Start();
  }
  spdlog::info("processes: {} replay shard(s), {} learner rank(s), {} actor(s); logs in {}",
               config.replay.num_shards, ranks, config.actor.num_actors, run.logs().string());

  const std::string stop_reason =
      monitor.WaitForStop(stop_signals, [&]() -> std::optional<std::string> {
        if (const std::string failed = given_up.name(); !failed.empty()) {
          return "failed: " + failed + " was given up";
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
