#pragma once

// The Prometheus endpoint of one role process (rlswarm replay, learner,
// actor): its own /metrics, so a Prometheus server sees every process of a
// run, each under its own labels, instead of the launcher's sums alone.
//
// Every sample carries the role's labels (role="replay", shard="0"; role=
// "learner", rank="1"; role="actor", actor="3"), so a direct scrape says
// whose numbers they are; prometheus_targets.json gives the same labels to
// Prometheus as target labels (scrape with honor_labels: true). The metric
// names are the role's own (rlswarm_actor_*, rlswarm_replay_shard_*,
// rlswarm_learner_rank_*), never the launcher's run-wide ones, so summing a
// family over targets never counts one thing twice.
//
// How a launcher learns the port (0 = the kernel picks one): once serving,
// the process writes its URL (http://<address>:<port>/metrics) to its
// endpoint file, atomically; a restarted process rewrites it.
//
// The render functions are thread-safe (they only read the roles' stats()
// or atomics).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/actor.h"
#include "observe/metrics_http_server.h"
#include "replay/service/replay_service.h"

namespace rlswarm::launch {

struct RoleMetricsOptions {
  std::string bind_address = "127.0.0.1";  // an IP address: only that interface listens
  int port = -1;                           // -1 = no endpoint, 0 = a free port
  std::string endpoint_file;               // "" = write no file
};

// The URL a scraper uses for an endpoint bound to `bind_address`:`port`;
// IPv6 in brackets. A wildcard address (0.0.0.0, ::) names this machine by
// its host name, which other machines can reach.
std::string MetricsUrl(const std::string& bind_address, int port);

// Serves `render` on options.bind_address:options.port and writes the URL
// to options.endpoint_file. nullptr when options.port is -1. Throws what
// MetricsHttpServer throws (Unavailable when the port is taken,
// InvalidArgument for a bad address) and Unavailable when the file cannot
// be written.
std::unique_ptr<observe::MetricsHttpServer> StartRoleMetricsEndpoint(
    const RoleMetricsOptions& options, std::function<std::string()> render);

// {role, <index_label>: index}, e.g. ("replay", "shard", 0).
observe::PrometheusText::Labels RoleLabels(const std::string& role, const std::string& index_label,
                                           std::int64_t index);

// What a replay shard exposes: size, items inserted and sampled (the rate
// limiter's counts), checkpoints written and failed.
std::string ReplayShardMetrics(replay::ReplayService& service,
                               const observe::PrometheusText::Labels& labels);

// What an actor exposes: env steps, episodes, recent return, the policy
// version and its lag, steps/s, and its writer's transitions.
std::string ActorMetrics(const actors::ActorStats& stats,
                         const observe::PrometheusText::Labels& labels);

// What the training loop of one learner rank counts; written by that loop,
// read by the metrics thread.
struct LearnerRankCounters {
  std::atomic<std::int64_t> updates{0};       // updates done, including before a resume
  std::atomic<std::int64_t> replay_waits{0};  // Update() calls that found no batch in time
  // The training health of the last update (learner::StepHealth; global,
  // so every rank shows the same values): gradient norm before clipping,
  // the last known update-to-weight ratio, updates skipped for a NaN or Inf
  // gradient since this process started.
  std::atomic<double> grad_norm{0};
  std::atomic<double> update_to_weight{0};
  std::atomic<std::int64_t> nonfinite_skipped{0};
};
std::string LearnerRankMetrics(const LearnerRankCounters& counters,
                               const observe::PrometheusText::Labels& labels);

}  // namespace rlswarm::launch
