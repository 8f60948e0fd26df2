// `rlswarm launch CONFIG [section.key=value ...] [--run-dir DIR]` and
// `rlswarm launch --resume RUN_DIR [section.key=value ...]`: the whole
// system on this machine, in embedded or processes mode (launch.mode), in a
// run directory (apps/run_directory.h). Prints summary.json to stdout at the
// end; the exit status is 0 whether or not the run was solved, and non-zero
// when a role failed.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "apps/commands.h"
#include "common/errors.h"
#include "common/logging.h"
#include "config/experiment_config.h"
#include "launch/embedded_launch.h"
#include "launch/process_control.h"
#include "launch/process_launch.h"
#include "launch/run_directory.h"
#include "observe/scalar_log.h"
#include "observe/tensorboard_writer.h"

namespace rlswarm::apps {
namespace {

struct LaunchArgs {
  std::string config_file;
  std::string run_dir;
  std::string resume;
  std::vector<std::string> overrides;
};

// "auto": embedded unless the learner has several ranks (they need
// processes: one c10d rank each).
std::string ResolveMode(const config::ExperimentConfig& config, int learner_ranks) {
  if (config.launch.mode != "auto") return config.launch.mode;
  return learner_ranks > 1 ? "processes" : "embedded";
}

void RunLaunch(LaunchArgs args) {
  // CLI11 hands every positional to `overrides` when the first one looks
  // like an override; the config file is the one without '='.
  if (args.resume.empty() && args.config_file.empty()) {
    throw config::ConfigError("launch: give a CONFIG file, or --resume RUN_DIR");
  }
  const bool resume = !args.resume.empty();
  if (resume && !args.config_file.empty()) {
    if (args.config_file.find('=') == std::string::npos) {
      throw config::ConfigError("launch --resume takes the config of the run directory; drop " +
                                args.config_file);
    }
    args.overrides.insert(args.overrides.begin(), args.config_file);
    args.config_file.clear();
  }
  // A resumed run's directory is checked first: its config is in it.
  std::optional<launch::RunDirectory> resumed;
  if (resume) resumed = launch::RunDirectory::Open(args.resume, /*resume=*/true);
  const std::string config_file = resume ? resumed->config().string() : args.config_file;
  config::ExperimentConfig config = config::ExperimentConfig::Load(config_file, args.overrides);
  const launch::RunDirectory run =
      resume ? *resumed
             : launch::RunDirectory::Open(
                   args.run_dir.empty()
                       ? launch::RunDirectory::DefaultPath(config.launch.runs_dir, config_file)
                       : std::filesystem::path(args.run_dir),
                   /*resume=*/false);
  // Checkpoints live in the run directory unless the config says otherwise,
  // so --resume finds them.
  if (config.learner.checkpoint_dir.empty()) {
    config.learner.checkpoint_dir = run.learner_checkpoints().string();
  }
  if (config.replay.checkpoint_dir.empty()) {
    config.replay.checkpoint_dir = run.replay_checkpoints().string();
  }
  run.WriteConfig(config.ToYaml());

  launch::RunSummary earlier;
  if (resume) {
    if (std::optional<launch::RunSummary> s = run.ReadSummary()) {
      earlier = *s;
      earlier.resumes += 1;
    }
  }
  const std::string mode = ResolveMode(config, static_cast<int>(config.launch.learner_ranks));
  InitLogging("launch", ParseLogLevel(config.log.level),
              (run.logs() / (mode == "embedded" ? "launch.log" : "launcher.log")).string(),
              spdlog::level::err);
  spdlog::info("run directory {} ({}), mode {}", run.root().string(), resume ? "resumed" : "new",
               mode);
  std::cerr << "rlswarm launch: " << config.env.name << ", " << mode << " mode, run directory "
            << run.root().string() << "\n";

  // Blocked before any role starts a thread, so every thread inherits the
  // mask and the signals wait for the launcher's loop.
  const sigset_t stop_signals = launch::BlockStopSignals();
  observe::ScalarLog scalars;
  scalars.Add(observe::OpenJsonlScalarWriter(run.scalars().string()));
  scalars.Add(observe::OpenTensorBoardWriter(run.tensorboard().string()));

  launch::RunSummary summary;
  if (mode == "embedded") {
    summary = launch::RunEmbedded(config, run, scalars, earlier, stop_signals);
  } else {
    summary = launch::RunProcesses(config, run, scalars, earlier, stop_signals);
  }
  // The result reaches stdout before anything is written: a full disk must
  // not cost the user the summary (the files are tried after, each on its
  // own, and what failed is named).
  std::cout << summary.ToJson().dump(2) << std::endl;
  scalars.Flush();
  std::vector<std::string> not_written = scalars.failures();
  try {
    run.WriteSummary(summary);
  } catch (const std::exception& e) {
    not_written.push_back(e.what());
  }
  if (!not_written.empty()) {
    throw Unavailable("the run's summary is above, but " + std::to_string(not_written.size()) +
                      " file(s) could not be written: " + not_written.front());
  }
  if (summary.stop_reason.find("failed") != std::string::npos) {
    throw Internal("the run stopped because a role failed: " + summary.stop_reason);
  }
}

}  // namespace

void AddLaunchCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "launch", "Run replay, learner, actors and an evaluator on this machine, in a run directory");
  auto args = std::make_shared<LaunchArgs>();
  cmd->add_option("config", args->config_file, "Experiment config (YAML)");
  cmd->add_option("overrides", args->overrides, "Config overrides: section.key=value ...");
  cmd->add_option("--run-dir", args->run_dir,
                  "Run directory (default: launch.runs_dir/<config name>-<UTC time>)");
  cmd->add_option("--resume", args->resume, "Continue the stopped run in this directory")
      ->check(CLI::ExistingDirectory);
  cmd->callback([args] { RunLaunch(*args); });
}

}  // namespace rlswarm::apps
