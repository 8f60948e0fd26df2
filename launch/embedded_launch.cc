#include "launch/embedded_launch.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/acting_policy.h"
#include "actors/actor.h"
#include "actors/q_policy.h"
#include "common/thread_annotations.h"
#include "config/learner_factory.h"
#include "config/role_options.h"
#include "launch/prometheus_targets.h"
#include "launch/run_monitor.h"
#include "learner/dist/device_plan.h"
#include "learner/dist/torch_adapter.h"
#include "observe/metrics_http_server.h"
#include "replay/service/replay_service.h"

namespace rlswarm::launch {
namespace {

constexpr char kWeightsEndpoint[] = "inproc://rlswarm-weights";
constexpr char kWeightsSnapshotEndpoint[] = "inproc://rlswarm-weights-snapshot";

// The learner rank's thread: trains until stopped (or learner.max_updates),
// then publishes and checkpoints the final weights.
class LearnerThread {
 public:
  LearnerThread(const config::ExperimentConfig& config) {
    learner::ApeXOptions options = config.learner.ToApeXOptions(
        config.replay.ToSamplerOptions(config.security.ToClientOptions()),
        config.security.ToServerOptions());
    // Short waits for replay, so a stop is seen within a quarter second even
    // while replay is filling or rate limited.
    options.sampler.timeout = std::min(options.sampler.timeout, std::chrono::milliseconds(250));
    options.log_interval = std::chrono::milliseconds(0);
    options.update_priorities = config.replay.selector == "prioritized";
    // One rank in this process: learner.device is honoured (on a GPU the
    // model runs on cuda:0), but no process group is built, so the model
    // takes the direct path (backend none).
    try {
      const learner::DevicePlan plan = learner::PlanDevice(
          {config.learner.device, config.learner.backend, 0, 1}, learner::ThisProcessInventory());
      if (!plan.fallback.empty()) spdlog::warn("{}", plan.fallback);
      options.model.device = plan.device;
    } catch (const InvalidArgument& e) {
      throw config::ConfigError(e.what());
    }
    device_ = options.model.device;
    max_updates_ = config.learner.max_updates;
    dqn_ = config::MakeLearner(
        config, options, learner::ShardMesh::OneDim(std::make_shared<learner::Communicator>()));
    if (auto dir = dqn_->Resume())
      spdlog::info("learner resumed from {} at update {}", *dir, dqn_->updates());
    updates_ = dqn_->updates();
    has_checkpoints_ = !options.checkpoint_dir.empty();
    thread_ = std::thread([this] { Loop(); });
  }
  ~LearnerThread() {
    Stop();
    Join();
  }

  void Stop() { stop_ = true; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  std::int64_t updates() const { return updates_; }
  bool finished() const { return finished_; }
  std::string error() const {
    MutexLock lock(mu_);
    return error_;
  }
  learner::LearnerMetrics metrics() const {
    MutexLock lock(mu_);
    return metrics_;
  }

 private:
  void Loop() {
    try {
      // CUDA's current device is per thread: this one trains on the model's.
      learner::SetThreadDevice(device_);
      auto last_metrics = std::chrono::steady_clock::now();
      while (!stop_ && (max_updates_ == 0 || dqn_->updates() < max_updates_)) {
        if (!dqn_->Update()) continue;
        updates_ = dqn_->updates();
        const auto now = std::chrono::steady_clock::now();
        if (now - last_metrics >= std::chrono::seconds(1)) {
          last_metrics = now;
          MutexLock lock(mu_);
          metrics_ = dqn_->TakeMetrics();
          spdlog::info(
              "learner: {} updates ({:.0f}/s), loss {:.4g}, |td| {:.4g}, per update: sample "
              "{:.0f} us, train {:.0f} us; staleness {:.1f}; grad norm {:.3g}{}",
              metrics_.updates, metrics_.updates_per_sec, metrics_.loss, metrics_.mean_abs_td,
              metrics_.sample_seconds * 1e6, metrics_.train_seconds * 1e6, metrics_.staleness,
              metrics_.grad_norm,
              metrics_.nonfinite_skipped > 0
                  ? fmt::format("; {} skipped (non-finite gradient)", metrics_.nonfinite_skipped)
                  : "");
        }
      }
      dqn_->Publish();
      if (has_checkpoints_) spdlog::info("learner checkpoint {}", dqn_->SaveCheckpoint());
    } catch (const std::exception& e) {
      spdlog::error("learner failed: {}", e.what());
      MutexLock lock(mu_);
      error_ = e.what();
    }
    finished_ = true;
  }

  std::unique_ptr<learner::ApeXLearner> dqn_;
  at::Device device_ = at::kCPU;
  std::int64_t max_updates_ = 0;
  bool has_checkpoints_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::atomic<std::int64_t> updates_{0};
  mutable Mutex mu_;
  std::string error_ RLSWARM_GUARDED_BY(mu_);
  learner::LearnerMetrics metrics_ RLSWARM_GUARDED_BY(mu_);
  std::thread thread_;
};

// One actor and its thread; finished episodes go to episodes/actor-<i>.jsonl.
class ActorThread {
 public:
  // `start_steps`: this actor's share of a resumed run's earlier env steps.
  ActorThread(const config::ExperimentConfig& config, std::int64_t id, const RunDirectory& run,
              std::int64_t start_steps)
      : id_(id),
        episodes_(run.episodes() / ("actor-" + std::to_string(id) + ".jsonl"), std::ios::app) {
    actors::ActorOptions options = config::MakeActorOptions(config, id, /*max_steps=*/0);
    options.start_steps = start_steps;
    rpc::SubscriberOptions weights;
    weights.endpoint = kWeightsEndpoint;
    weights.snapshot_endpoint = kWeightsSnapshotEndpoint;
    weights.name = "actor-weights";
    options.weights = {weights};
    actor_ = std::make_unique<actors::Actor>(options, config.ActingNetworks(),
                                             config::MakeActorWriterOptions(config));
    thread_ = std::thread([this] { Loop(); });
  }
  ~ActorThread() {
    actor_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  void Stop() { actor_->Stop(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  actors::ActorStats stats() const { return actor_->stats(); }
  std::string error() const {
    MutexLock lock(mu_);
    return error_;
  }

 private:
  void Loop() {
    try {
      actor_->Run([this](const actors::EpisodeStats& e) {
        episodes_ << config::EpisodeJsonLine(e) << "\n";
      });
    } catch (const std::exception& e) {
      spdlog::error("actor {} failed: {}", id_, e.what());
      MutexLock lock(mu_);
      error_ = e.what();
    }
  }

  const std::int64_t id_;
  std::ofstream episodes_;
  std::unique_ptr<actors::Actor> actor_;
  mutable Mutex mu_;
  std::string error_ RLSWARM_GUARDED_BY(mu_);
  std::thread thread_;
};

// The run's progress from its threads' counters and the shards' totals.
RunProgress SampleProgress(const RunSummary& earlier,
                           const std::vector<std::unique_ptr<ActorThread>>& actor_threads,
                           const LearnerThread& learner,
                           const std::vector<std::unique_ptr<replay::ReplayService>>& shards) {
  RunProgress p;
  p.env_steps = earlier.env_steps;
  double return_sum = 0, lag_sum = 0;
  std::int64_t with_returns = 0;
  for (const auto& a : actor_threads) {
    const actors::ActorStats s = a->stats();
    p.env_steps += s.env_steps;
    if (s.episodes > 0) {
      return_sum += s.mean_recent_return;
      ++with_returns;
    }
    lag_sum += static_cast<double>(learner.updates() - s.policy_version);
  }
  if (with_returns > 0) p.train_return = return_sum / static_cast<double>(with_returns);
  if (!actor_threads.empty()) p.version_lag = lag_sum / static_cast<double>(actor_threads.size());
  p.updates = learner.updates();
  for (const auto& shard : shards) {
    const replay::TableTotals t = shard->table().Totals();
    p.replay_size += t.size;
    p.replay_inserted += t.inserted;
    p.replay_sampled += t.sampled;
  }
  const learner::LearnerMetrics m = learner.metrics();
  if (m.updates > 0) {
    p.loss = m.loss;
    p.staleness = m.staleness;
    p.grad_norm = m.grad_norm;
    p.update_to_weight = m.update_to_weight;
    p.nonfinite_skipped = m.nonfinite_skipped;
  }
  return p;
}

}  // namespace

RunSummary RunEmbedded(config::ExperimentConfig config, const RunDirectory& run,
                       observe::ScalarLog& scalars, const RunSummary& earlier,
                       const sigset_t& stop_signals) {
  // Every endpoint in-process.
  config.replay.endpoints.clear();
  for (int i = 0; i < config.replay.num_shards; ++i) {
    config.replay.endpoints.push_back("inproc://rlswarm-replay-" + std::to_string(i));
  }
  config.learner.weights_endpoint = kWeightsEndpoint;
  config.learner.weights_snapshot_endpoint = kWeightsSnapshotEndpoint;
  config.learner.publish_mode = "full";
  // One intra-op thread per role: the roles share the cores.
  at::set_num_threads(1);
  actors::SetInferenceThreads(1);

  std::vector<std::unique_ptr<replay::ReplayService>> shards;
  for (int i = 0; i < config.replay.num_shards; ++i) {
    shards.push_back(std::make_unique<replay::ReplayService>(config.replay.ToServiceOptions(
        i, config.TransitionSignature(), config.security.ToServerOptions(),
        config.security.ToClientOptions())));
    shards.back()->Start();
  }
  auto learner = std::make_unique<LearnerThread>(config);
  std::vector<std::unique_ptr<ActorThread>> actor_threads;
  for (std::int64_t i = 0; i < config.actor.num_actors; ++i) {
    // A resumed run's exploration continues where the earlier runs left it.
    actor_threads.push_back(
        std::make_unique<ActorThread>(config, i, run, earlier.env_steps / config.actor.num_actors));
  }

  auto progress = [&]() { return SampleProgress(earlier, actor_threads, *learner, shards); };

  RunMonitorOptions monitor_options;
  monitor_options.launch = config.launch;
  monitor_options.evaluator = config::MakeEvaluatorOptions(config);
  monitor_options.networks = config.ActingNetworks(/*with_critic=*/false);
  rpc::SubscriberOptions evaluator_weights;
  evaluator_weights.endpoint = kWeightsEndpoint;
  evaluator_weights.snapshot_endpoint = kWeightsSnapshotEndpoint;
  evaluator_weights.name = "evaluator-weights";
  monitor_options.weights = {evaluator_weights};
  monitor_options.mode = "embedded";
  monitor_options.earlier = earlier;
  RunMonitor monitor(monitor_options, run, scalars, progress);
  monitor.Start();
  const std::unique_ptr<observe::MetricsHttpServer> metrics =
      StartMetricsEndpoint(config.launch, run, monitor);
  // Every role is a thread of this process: the launcher's endpoint is the
  // run's only target.
  if (metrics) {
    PrometheusTargets(
        {run.prometheus_targets(),
         {{run.endpoints() / "metrics", {{"role", "launcher"}, {"run", run.name()}}}}})
        .Refresh();
  }
  spdlog::info("embedded run: {} replay shard(s), 1 learner rank, {} actor(s) x {} {} envs",
               shards.size(), actor_threads.size(), config.env.num_envs, config.env.name);

  const std::string stop_reason =
      monitor.WaitForStop(stop_signals, [&]() -> std::optional<std::string> {
        if (!learner->error().empty()) return "learner failed: " + learner->error();
        if (learner->finished()) return "max_updates";
        for (std::size_t i = 0; i < actor_threads.size(); ++i) {
          const std::string error = actor_threads[i]->error();
          if (!error.empty()) return "actor " + std::to_string(i) + " failed: " + error;
        }
        return std::nullopt;
      });
  spdlog::info("stopping: {}", stop_reason);

  for (auto& a : actor_threads) a->Stop();
  for (auto& a : actor_threads) a->Join();
  learner->Stop();
  learner->Join();
  RunSummary summary = monitor.Finish(stop_reason);
  for (auto& shard : shards) shard->Stop();
  return summary;
}

}  // namespace rlswarm::launch
