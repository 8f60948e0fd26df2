// `rlswarm plot RUN_DIR [--tags a,b,...] [--x steps|time] [--out FILE]`:
// learning curves of a run (its scalars.jsonl) as one PNG, one panel per
// tag, x = env steps or wall time in seconds since the run's first record.

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "apps/commands.h"
#include "launch/run_directory.h"
#include "observe/learning_curve_plot.h"
#include "observe/scalar_log.h"

namespace rlswarm::apps {
namespace {

struct PlotArgs {
  std::string run_dir;
  std::vector<std::string> tags = {"eval/mean_return", "train/mean_return", "learner/loss",
                                   "learner/updates_per_sec", "actors/env_steps_per_sec"};
  std::string out;
  observe::PlotX x = observe::PlotX::kEnvSteps;
  int width = 1200;
  int panel_height = 300;
};

void RunPlot(const PlotArgs& args) {
  const std::filesystem::path root(args.run_dir);
  const std::vector<observe::Scalar> scalars =
      observe::ReadJsonlScalars((root / "scalars.jsonl").string());
  // Tags the run lacks are skipped (none there: InvalidArgument, listing
  // the tags the run has).
  const std::vector<std::string>& tags = args.tags;
  const std::string out = args.out.empty() ? (root / "curves.png").string() : args.out;
  observe::PlotLearningCurves(
      scalars, tags, out,
      {.width = args.width, .height_per_panel = args.panel_height, .x = args.x});
  std::cout << out << "\n";
}

}  // namespace

void AddPlotCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot", "Draw a run's learning curves to a PNG");
  auto args = std::make_shared<PlotArgs>();
  cmd->add_option("run_dir", args->run_dir, "Run directory (rlswarm launch)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--tags", args->tags, "Scalar tags to draw, one panel each")
      ->delimiter(',')
      ->capture_default_str();
  const std::map<std::string, observe::PlotX> x_axes = {{"steps", observe::PlotX::kEnvSteps},
                                                        {"time", observe::PlotX::kWallTime}};
  cmd->add_option("--x", args->x, "x axis: steps (env steps) or time (wall time in seconds)")
      ->transform(CLI::CheckedTransformer(x_axes))
      ->default_str("steps");
  cmd->add_option("--out", args->out, "PNG file (default: RUN_DIR/curves.png)");
  cmd->add_option("--width", args->width, "Image width in pixels")->capture_default_str();
  cmd->add_option("--panel-height", args->panel_height, "Height of one panel in pixels")
      ->capture_default_str();
  cmd->callback([args] { RunPlot(*args); });
}

}  // namespace rlswarm::apps
