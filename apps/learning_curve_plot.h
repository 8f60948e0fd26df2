#pragma once

// `rlswarm plot`'s core: learning curves from a run's scalars, drawn as a PNG
// with no plotting library. One panel per tag, stacked top to bottom; in each
// x is the env step, y the value, the curve a polyline (with a marker on
// every point when there are at most 50), the axes carry numeric tick labels
// and the panel its tag as the title, in an embedded 5x7 bitmap font (capital
// letters: tags print upper-cased; numbers like 1.5E6).
//
// Thread-safety: pure functions, safe from any thread.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/scalar_log.h"
#include "envs/render.h"

namespace rlswarm::apps {

// The curve's colour (matplotlib's first colour, "tab:blue").
inline constexpr std::array<std::uint8_t, 3> kCurveColour = {31, 119, 180};

// Draws the panels. `tags` picks and orders the panels (empty: every tag in
// `scalars`, in order of first appearance); tags that are not in `scalars`
// are skipped. Points are ordered by step; NaN and infinite values are left
// out. Throws InvalidArgument, listing the tags that are there, when none of
// `tags` is, and when width is outside [200, 8000] or height_per_panel
// outside [100, 4000] or the image would exceed 64 megapixels.
envs::Image RenderLearningCurves(const std::vector<Scalar>& scalars,
                                 const std::vector<std::string>& tags, int width = 1200,
                                 int height_per_panel = 300);

// RenderLearningCurves, written to `png_path` (atomically, see WritePng). The
// image is `width` x (height_per_panel * number of panels drawn). Throws as
// RenderLearningCurves and WritePng do.
void PlotLearningCurves(const std::vector<Scalar>& scalars, const std::vector<std::string>& tags,
                        const std::string& png_path, int width = 1200, int height_per_panel = 300);

}  // namespace rlswarm::apps
