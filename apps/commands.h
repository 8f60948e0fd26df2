#pragma once

// The subcommands of the `rlswarm` binary. Each registers its flags on a
// CLI11 app and runs when selected; errors propagate as rlswarm exceptions.

#include <CLI/CLI.hpp>

namespace rlswarm::apps {

// `rlswarm config [--yaml] [--config FILE] [section.key=value ...]`,
// `rlswarm config --markdown`
void AddConfigCommand(CLI::App& app);
// `rlswarm envs [--json]`
void AddEnvsCommand(CLI::App& app);
// `rlswarm evaluate --env NAME --policy random --episodes N --seed S ...`
void AddEvaluateCommand(CLI::App& app);
// `rlswarm keygen --out PREFIX [--force] [--json]`
void AddKeygenCommand(CLI::App& app);
// `rlswarm replay --config FILE --shard I [--bind EP] [--endpoint-file F]`
void AddReplayCommand(CLI::App& app);
// `rlswarm actor --config FILE --actor-id I [--num-actors N] ...`
void AddActorCommand(CLI::App& app);

// `rlswarm learner --config FILE [--rank R --world-size W --master-addr A
// --master-port P] [--weights-endpoint-file F] [section.key=value ...]`
void AddLearnerCommand(CLI::App& app);

// `rlswarm launch CONFIG [section.key=value ...] [--run-dir DIR]`,
// `rlswarm launch --resume RUN_DIR`
void AddLaunchCommand(CLI::App& app);
// `rlswarm plot RUN_DIR [--tags a,b] [--out FILE]`
void AddPlotCommand(CLI::App& app);

// The flags of a role's own Prometheus endpoint, the same for `replay`,
// `learner` and `actor` (the launcher passes them in processes mode).
template <class Args>
void AddMetricsEndpointOptions(CLI::App* cmd, Args* args) {
  cmd->add_option("--metrics-port", args->metrics_port,
                  "Serve Prometheus metrics on this port (0 = a free one; -1 = off)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--metrics-bind", args->metrics_bind,
                  "IP address the metrics endpoint listens on (launch.metrics_bind)");
  cmd->add_option("--metrics-endpoint-file", args->metrics_endpoint_file,
                  "Write the metrics URL to this file once serving");
}

}  // namespace rlswarm::apps
