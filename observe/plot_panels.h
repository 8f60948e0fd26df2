#pragma once

// What `rlswarm plot` draws, before any drawing: the run's scalars sorted
// into panels (one per tag), with the x axis chosen (env steps or wall
// time) and the axis titles and legend labels a reader needs.
//
// A "<prefix>/mean_return" panel gathers the evaluations the run monitor
// records (launch/run_monitor.cc): "<prefix>/mean_return" for evaluations
// that ran all their episodes, "<prefix>/stopped_mean_return" for those
// stopped once the target was out of reach (the mean of the episodes they
// finished), and "<prefix>/min_return" / "<prefix>/max_return" for every
// evaluation, drawn as a band. Without these companions every evaluation
// but the solving one would be missing from a run that stops at its target.
//
// Thread-safety: pure functions, safe from any thread.

#include <string>
#include <vector>

#include "observe/scalar_log.h"

namespace rlswarm::observe {

enum class PlotX {
  kEnvSteps,  // the scalar's step: env steps of the run when it was taken
  kWallTime,  // seconds since the run's first scalar (its wall_time)
};

// "env steps" or "wall time (s)".
std::string XAxisTitle(PlotX x);
// The y axis title with its unit, from the tag's last path component:
// "return (sum of rewards per episode)", "updates per second", ...
std::string YAxisTitle(const std::string& tag);

struct PlotPoint {
  double x = 0;
  double y = 0;
  bool partial = false;  // an evaluation stopped early (drawn hollow)
};

struct BandPoint {
  double x = 0;
  double low = 0;
  double high = 0;
};

struct PlotPanel {
  std::string tag;  // the panel's title
  std::string y_title;
  std::string curve_label;        // the legend's name for the filled points and the line
  std::string partial_label;      // for the hollow points (when there are any)
  std::string band_label;         // for the band (when there is one)
  std::vector<PlotPoint> points;  // sorted by x; finite values only
  std::vector<BandPoint> band;    // sorted by x; finite values only
  bool evaluations = false;       // an evaluation panel: every point gets a marker
};

// The panels for `tags` (empty: every tag in `scalars` in order of first
// appearance, less the evaluation companions drawn on their mean_return
// panel); tags that are not in `scalars` are skipped. Throws
// InvalidArgument, listing the tags that are there, when none of `tags` is.
std::vector<PlotPanel> BuildPlotPanels(const std::vector<Scalar>& scalars,
                                       const std::vector<std::string>& tags, PlotX x);

}  // namespace rlswarm::observe
