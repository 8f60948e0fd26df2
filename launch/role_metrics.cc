#include "launch/role_metrics.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "launch/process_control.h"

namespace rlswarm::launch {

std::string MetricsUrl(const std::string& bind_address, int port) {
  std::string host = bind_address;
  if (host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  return "http://" + host + ":" + std::to_string(port) + "/metrics";
}

std::unique_ptr<observe::MetricsHttpServer> StartRoleMetricsEndpoint(
    const RoleMetricsOptions& options, std::function<std::string()> render) {
  if (options.port < 0) return nullptr;
  auto server = std::make_unique<observe::MetricsHttpServer>(options.bind_address, options.port,
                                                             std::move(render));
  const std::string url = MetricsUrl(options.bind_address, server->port());
  // Written only once the socket listens: a scraper that reads the file
  // finds the endpoint up.
  if (!options.endpoint_file.empty()) WriteLinesAtomically(options.endpoint_file, {url});
  spdlog::info("Prometheus metrics on {}", url);
  return server;
}

observe::PrometheusText::Labels RoleLabels(const std::string& role, const std::string& index_label,
                                           std::int64_t index) {
  return {{"role", role}, {index_label, std::to_string(index)}};
}

std::string ReplayShardMetrics(replay::ReplayService& service,
                               const observe::PrometheusText::Labels& labels) {
  const replay::TableTotals totals = service.table().Totals();
  const replay::ReplayServiceStats stats = service.stats();
  observe::PrometheusText text;
  text.Gauge("rlswarm_replay_shard_size", "items in this shard", static_cast<double>(totals.size),
             labels)
      .Counter("rlswarm_replay_shard_inserted_total",
               "items inserted into this shard (the rate limiter's count)",
               static_cast<double>(totals.inserted), labels)
      .Counter("rlswarm_replay_shard_sampled_total",
               "items sampled from this shard (the rate limiter's count)",
               static_cast<double>(totals.sampled), labels)
      .Gauge("rlswarm_replay_shard_storage_bytes",
             "memory of the items stored: their columns and the shared frames with their index "
             "(over rlswarm_replay_shard_size: bytes per stored transition)",
             static_cast<double>(totals.storage_bytes), labels)
      .Counter("rlswarm_replay_shard_checkpoints_written_total", "checkpoints written",
               static_cast<double>(stats.checkpoints_written), labels)
      .Counter("rlswarm_replay_shard_checkpoints_failed_total",
               "checkpoints that failed (e.g. a full disk)",
               static_cast<double>(stats.checkpoints_failed), labels);
  return text.Text();
}

std::string ActorMetrics(const actors::ActorStats& stats,
                         const observe::PrometheusText::Labels& labels) {
  observe::PrometheusText text;
  text.Counter("rlswarm_actor_env_steps_total", "env steps of this actor, all its envs",
               static_cast<double>(stats.env_steps), labels)
      .Counter("rlswarm_actor_episodes_total", "episodes this actor finished",
               static_cast<double>(stats.episodes), labels)
      .Gauge("rlswarm_actor_env_steps_per_second", "env steps per second, recent",
             stats.steps_per_sec, labels)
      .Gauge("rlswarm_actor_policy_version", "the weights version this actor acts with",
             static_cast<double>(stats.policy_version), labels)
      .Gauge("rlswarm_actor_policy_lag_updates",
             "newest weights version seen minus the one acted with",
             static_cast<double>(stats.newest_version_seen - stats.policy_version), labels)
      .Counter("rlswarm_actor_transitions_sent_total", "transitions handed to the replay writer",
               static_cast<double>(stats.writer.items_appended), labels)
      .Counter("rlswarm_actor_transitions_acknowledged_total", "transitions a shard stored",
               static_cast<double>(stats.writer.items_acknowledged), labels)
      .Counter("rlswarm_actor_transitions_dropped_total",
               "transitions dropped (replay unreachable past the writer's bound, or rejected)",
               static_cast<double>(stats.writer.items_dropped), labels)
      .Counter("rlswarm_actor_env_errors_total",
               "env failures (raised, malformed output, worker died) survived by restarting "
               "the envs",
               static_cast<double>(stats.env_errors), labels);
  // No episode yet: no return to report (0 would be a real-looking value).
  if (stats.episodes > 0) {
    text.Gauge("rlswarm_actor_recent_return", "mean return of this actor's last 100 episodes",
               stats.mean_recent_return, labels);
  }
  return text.Text();
}

std::string LearnerRankMetrics(const LearnerRankCounters& counters,
                               const observe::PrometheusText::Labels& labels) {
  observe::PrometheusText text;
  text.Counter("rlswarm_learner_rank_updates_total",
               "updates of this rank, including those before a resume",
               static_cast<double>(counters.updates.load()), labels)
      .Counter("rlswarm_learner_rank_replay_waits_total",
               "update attempts that found no batch in time (replay filling or rate limited)",
               static_cast<double>(counters.replay_waits.load()), labels)
      .Gauge("rlswarm_learner_rank_grad_norm",
             "global gradient norm before clipping, last update (the same on every rank)",
             counters.grad_norm.load(), labels)
      .Gauge("rlswarm_learner_rank_update_to_weight",
             "||update|| / ||weights|| of the last optimizer step whose ratio is known",
             counters.update_to_weight.load(), labels)
      .Counter("rlswarm_learner_rank_nonfinite_skipped_total",
               "updates whose optimizer step every rank skipped for a NaN or Inf gradient",
               static_cast<double>(counters.nonfinite_skipped.load()), labels);
  return text.Text();
}

}  // namespace rlswarm::launch
