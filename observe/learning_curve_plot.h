#pragma once

// `rlswarm plot`'s drawing: the panels of plot_panels.h drawn with cairo
// into an RGB image, one panel per tag stacked top to bottom. Each panel
// has the tag as its title, a legend, axis titles with units, tick labels
// and a light grid; an evaluation panel shows every evaluation (filled:
// all episodes ran, hollow: stopped early) over its min-max band.
//
// Thread-safety: pure functions, safe from any thread.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "envs/render.h"
#include "observe/plot_panels.h"
#include "observe/scalar_log.h"

namespace rlswarm::observe {

// The curve's colour (matplotlib's first colour, "tab:blue"); the band is
// this colour at kBandOpacity over the white background.
inline constexpr std::array<std::uint8_t, 3> kCurveColour = {31, 119, 180};
inline constexpr double kBandOpacity = 0.2;

struct PlotOptions {
  int width = 1200;
  int height_per_panel = 300;
  PlotX x = PlotX::kEnvSteps;
};

// Draws the panels BuildPlotPanels(scalars, tags, options.x) returns; the
// image is width x (height_per_panel * panels). Throws as BuildPlotPanels
// does, and InvalidArgument when width is outside [200, 8000] or
// height_per_panel outside [100, 4000] or the image would exceed 64
// megapixels.
envs::Image RenderLearningCurves(const std::vector<Scalar>& scalars,
                                 const std::vector<std::string>& tags,
                                 const PlotOptions& options = {});

// RenderLearningCurves, written to `png_path` (atomically, see WritePng).
// Throws as RenderLearningCurves and WritePng do.
void PlotLearningCurves(const std::vector<Scalar>& scalars, const std::vector<std::string>& tags,
                        const std::string& png_path, const PlotOptions& options = {});

}  // namespace rlswarm::observe
