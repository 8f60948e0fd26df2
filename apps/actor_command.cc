// `rlswarm actor`: one actor process of the swarm, until SIGTERM/SIGINT or
// --max-steps.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/acting_policy.h"
#include "actors/actor.h"
#include "actors/q_policy.h"
#include "apps/commands.h"
#include "common/logging.h"
#include "config/experiment_config.h"
#include "config/role_options.h"
#include "launch/process_control.h"
#include "launch/role_metrics.h"
#include "models/model_spec.h"

namespace rlswarm::apps {
namespace {

struct ActorArgs {
  std::string config_file;
  std::int64_t actor_id = 0;
  std::int64_t num_actors = 0;
  std::vector<std::string> weights_endpoint_files;
  std::int64_t max_steps = 0;
  std::int64_t start_steps = 0;  // --start-steps: a resumed run's earlier env steps
  std::string metrics_file;
  int metrics_port = -1;
  std::string metrics_bind;
  std::string metrics_endpoint_file;
  bool print_config = false;
  std::vector<std::string> overrides;
};

// The learner's weights endpoints: two lines, PUB then snapshot.
rpc::SubscriberOptions ReadWeightsEndpoints(const std::string& path,
                                            const rpc::SecurityOptions& security) {
  std::ifstream in(path);
  rpc::SubscriberOptions o;
  if (!(in && std::getline(in, o.endpoint) && std::getline(in, o.snapshot_endpoint))) {
    throw InvalidArgument("--weights-endpoint-file " + path +
                          ": expected two lines (the learner's PUB and snapshot endpoints)");
  }
  o.security = security;
  o.name = "actor-weights";
  return o;
}

void RunActor(const ActorArgs& args, const CLI::App& cmd) {
  std::vector<std::string> overrides;
  if (cmd.count("--num-actors"))
    overrides.push_back("actor.num_actors=" + std::to_string(args.num_actors));
  if (!args.metrics_bind.empty()) overrides.push_back("launch.metrics_bind=" + args.metrics_bind);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  config::ExperimentConfig config = config::ExperimentConfig::Load(args.config_file, overrides);
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  if (args.actor_id < 0 || args.actor_id >= config.actor.num_actors) {
    throw config::ConfigError(
        "--actor-id " + std::to_string(args.actor_id) +
        " is not in [0, actor.num_actors = " + std::to_string(config.actor.num_actors) + ")");
  }
  InitLogging("actor-" + std::to_string(args.actor_id), ParseLogLevel(config.log.level));
  sigset_t stop_signals = launch::BlockStopSignals();
  actors::SetInferenceThreads(1);

  actors::ActorOptions options = config::MakeActorOptions(config, args.actor_id, args.max_steps);
  options.start_steps = args.start_steps;
  for (const std::string& file : args.weights_endpoint_files) {
    options.weights.push_back(ReadWeightsEndpoints(file, config.security.ToClientOptions()));
  }
  const replay::ReplayWriterOptions writer = config::MakeActorWriterOptions(config);

  actors::Actor actor(options, config.ActingNetworks(), writer);
  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    if (signal_number != 0) actor.Stop();
  });
  const std::unique_ptr<observe::MetricsHttpServer> endpoint = launch::StartRoleMetricsEndpoint(
      {config.launch.metrics_bind, args.metrics_port, args.metrics_endpoint_file},
      [&actor, labels = launch::RoleLabels("actor", "actor", args.actor_id)] {
        return launch::ActorMetrics(actor.stats(), labels);
      });
  std::ofstream metrics;
  if (!args.metrics_file.empty()) metrics.open(args.metrics_file, std::ios::app);
  auto last_log = std::chrono::steady_clock::now();
  spdlog::info("actor {}/{} on {} ({} envs), epsilon {:.4f}", args.actor_id, options.num_actors,
               options.env_name, options.env.num_envs,
               actors::Epsilon(options.exploration, options.actor_id, options.num_actors,
                               options.start_steps));
  actor.Run([&](const actors::EpisodeStats& e) {
    if (metrics.is_open()) {
      metrics << config::EpisodeJsonLine(e)
              << std::endl;  // the launcher reads the file while it grows
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_log >= std::chrono::seconds(5)) {
      last_log = now;
      const actors::ActorStats s = actor.stats();
      spdlog::info(
          "{} steps ({:.0f}/s), {} episodes, recent return {:.1f}, weights v{} (lag {}), "
          "sent {} acked {} dropped {}",
          s.env_steps, s.steps_per_sec, s.episodes, s.mean_recent_return, s.policy_version,
          s.newest_version_seen - s.policy_version, s.writer.items_appended,
          s.writer.items_acknowledged, s.writer.items_dropped);
    }
  });
  // Wake the signal thread if the run ended by itself.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  const actors::ActorStats s = actor.stats();
  spdlog::info("stopped after {} steps: {} transitions acknowledged, {} dropped", s.env_steps,
               s.writer.items_acknowledged, s.writer.items_dropped);
}

}  // namespace

void AddActorCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("actor", "Run one actor process of the swarm");
  auto args = std::make_shared<ActorArgs>();
  cmd->add_option("--config", args->config_file, "Experiment config (YAML)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--actor-id", args->actor_id, "This actor's index in [0, num_actors)")
      ->required();
  cmd->add_option("--num-actors", args->num_actors, "Actors in the swarm (actor.num_actors)");
  cmd->add_option("--weights-endpoint-file", args->weights_endpoint_files,
                  "File with the learner's weights PUB and snapshot endpoints (two lines). "
                  "learner.publish_mode parts: give it once per learner rank (FILE, "
                  "FILE.rank1, ...). Without it the actor keeps its initial weights")
      ->allow_extra_args(false)
      ->take_all();
  cmd->add_option("--max-steps", args->max_steps, "Stop after this many env steps (0 = never)");
  cmd->add_option("--start-steps", args->start_steps,
                  "Env steps this actor took before a resume: exploration continues from there")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--metrics-file", args->metrics_file,
                  "Append one JSON line per finished episode");
  AddMetricsEndpointOptions(cmd, args.get());
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args, cmd] { RunActor(*args, *cmd); });
}

}  // namespace rlswarm::apps
