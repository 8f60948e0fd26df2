// `rlswarm replay`: serves one shard of the replay service until SIGTERM or
// SIGINT, then writes a last checkpoint and exits 0.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/commands.h"
#include "common/logging.h"
#include "config/experiment_config.h"
#include "launch/process_control.h"
#include "launch/role_metrics.h"

namespace rlswarm::apps {
namespace {

struct ReplayArgs {
  std::string config_file;
  int shard = 0;
  std::string bind;
  std::string endpoint_file;
  int metrics_port = -1;
  std::string metrics_bind;
  std::string metrics_endpoint_file;
  bool print_config = false;
  std::vector<std::string> overrides;
};

void RunReplay(const ReplayArgs& args) {
  std::vector<std::string> overrides;
  if (!args.metrics_bind.empty()) overrides.push_back("launch.metrics_bind=" + args.metrics_bind);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  config::ExperimentConfig config = config::ExperimentConfig::Load(args.config_file, overrides);
  if (args.print_config) {
    std::cout << config.ToYaml();
    return;
  }
  if (args.shard < 0 || args.shard >= config.replay.num_shards) {
    throw config::ConfigError(
        "--shard " + std::to_string(args.shard) +
        " is not in [0, replay.num_shards = " + std::to_string(config.replay.num_shards) + ")");
  }
  InitLogging("replay-" + std::to_string(args.shard), ParseLogLevel(config.log.level));

  // The stop signals are taken by sigwait below; every thread the service
  // starts inherits the blocked mask.
  sigset_t stop_signals = launch::BlockStopSignals();

  replay::ReplayServiceOptions options = config.replay.ToServiceOptions(
      args.shard, config.TransitionSignature(), config.security.ToServerOptions(),
      config.security.ToClientOptions());
  if (!args.bind.empty()) options.server.endpoint = args.bind;
  replay::ReplayService service(options);
  service.Start();
  if (!args.endpoint_file.empty())
    launch::WriteLinesAtomically(args.endpoint_file, {service.endpoint()});
  std::printf("endpoint %s\n", service.endpoint().c_str());
  std::fflush(stdout);
  std::unique_ptr<observe::MetricsHttpServer> metrics = launch::StartRoleMetricsEndpoint(
      {config.launch.metrics_bind, args.metrics_port, args.metrics_endpoint_file},
      [&service, labels = launch::RoleLabels("replay", "shard", args.shard)] {
        return launch::ReplayShardMetrics(service, labels);
      });

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("{}: stopping", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  metrics.reset();  // no scrape reads the service while it stops
  service.Stop();
  const replay::ReplayServiceStats stats = service.stats();
  spdlog::info("stopped; {} checkpoints written, {} failed", stats.checkpoints_written,
               stats.checkpoints_failed);
}

}  // namespace

void AddReplayCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("replay", "Serve one shard of the replay service");
  auto args = std::make_shared<ReplayArgs>();
  cmd->add_option("--config", args->config_file, "Experiment config (YAML)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--shard", args->shard, "Which shard, in [0, replay.num_shards)")->required();
  cmd->add_option("--bind", args->bind,
                  "Endpoint to bind instead of the config's (tcp://127.0.0.1:* picks a port)");
  cmd->add_option("--endpoint-file", args->endpoint_file,
                  "Write the bound endpoint to this file once serving");
  AddMetricsEndpointOptions(cmd, args.get());
  cmd->add_flag("--print-config", args->print_config, "Print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->callback([args] { RunReplay(*args); });
}

}  // namespace rlswarm::apps
