// `rlswarm plot`: the panels it draws (every evaluation, its band, axes with
// units) and the PNG, decoded with libpng and checked region by region.

#include <gtest/gtest.h>
#include <png.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "common/errors.h"
#include "common/testing/files.h"
#include "observe/learning_curve_plot.h"
#include "observe/plot_panels.h"

namespace rlswarm::observe {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Learning-curve plots.

// A decoded RGB PNG.
envs::Image ReadPng(const std::string& path) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) {
    throw std::runtime_error("cannot read " + path + ": " + png.message);
  }
  png.format = PNG_FORMAT_RGB;
  envs::Image image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.rgb.data(), 0, nullptr)) {
    throw std::runtime_error("cannot decode " + path + ": " + png.message);
  }
  return image;
}

// Pixels of `colour` in rows [y0, y1).
int CountColour(const envs::Image& image, const std::array<std::uint8_t, 3>& colour, int y0,
                int y1) {
  int count = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const std::uint8_t* p = &image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3];
      count += p[0] == colour[0] && p[1] == colour[1] && p[2] == colour[2];
    }
  }
  return count;
}

std::vector<Scalar> Curves() {
  std::vector<Scalar> scalars;
  for (int i = 0; i <= 100; ++i) {
    scalars.push_back({"eval/mean_return", i * 10'000, 0, 20.0 + 480.0 * i / 100});
    scalars.push_back({"learner/loss", i * 10'000, 0, 1.0 / (1 + i)});
  }
  return scalars;
}

TEST(LearningCurvePlotTest, WritesOnePanelPerPresentTagWithTheCurveInIt) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const std::string path = (dir / "curves.png").string();
  PlotLearningCurves(Curves(), {"eval/mean_return", "not/there", "learner/loss"}, path);
  const envs::Image image = ReadPng(path);
  EXPECT_EQ(image.width, 1200);
  EXPECT_EQ(image.height, 2 * 300);
  EXPECT_GT(CountColour(image, kCurveColour, 0, 300), 500);
  EXPECT_GT(CountColour(image, kCurveColour, 300, 600), 500);
  EXPECT_GT(CountColour(image, {255, 255, 255}, 0, 600), 1200 * 600 / 2);  // white background
  EXPECT_GT(CountColour(image, {0, 0, 0}, 0, 300), 200);  // axes, ticks, labels, title
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(LearningCurvePlotTest, PlotsEveryTagWhenNoneAreNamed) {
  const envs::Image image =
      RenderLearningCurves(Curves(), {}, {.width = 600, .height_per_panel = 200});
  EXPECT_EQ(image.width, 600);
  EXPECT_EQ(image.height, 400);
  EXPECT_EQ(image.rgb.size(), 600u * 400 * 3);
}

TEST(LearningCurvePlotTest, ListsTheAvailableTagsWhenNoneMatch) {
  try {
    RenderLearningCurves(Curves(), {"eval/return", "loss"});
    FAIL() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("eval/mean_return, learner/loss"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(RenderLearningCurves({}, {}), InvalidArgument);
  EXPECT_THROW(RenderLearningCurves(Curves(), {}, {.width = 100}), InvalidArgument);
  EXPECT_THROW(RenderLearningCurves(Curves(), {}, {.height_per_panel = 50}), InvalidArgument);
}

TEST(LearningCurvePlotTest, SkipsNanAndInfiniteValues) {
  std::vector<Scalar> clean = Curves();
  std::vector<Scalar> dirty = clean;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  dirty.push_back({"learner/loss", 55'000, 0, nan});
  dirty.push_back({"learner/loss", 65'000, 0, inf});
  dirty.push_back({"learner/loss", 75'000, 0, -inf});
  const envs::Image a = RenderLearningCurves(clean, {"learner/loss"});
  const envs::Image b = RenderLearningCurves(dirty, {"learner/loss"});
  EXPECT_EQ(a.rgb, b.rgb);  // same axes, same curve

  const envs::Image only_nan = RenderLearningCurves({{"x", 1, 0, nan}, {"x", 2, 0, inf}}, {"x"});
  EXPECT_EQ(CountColour(only_nan, kCurveColour, 0, only_nan.height), 0);
}

TEST(LearningCurvePlotTest, SurvivesExtremeRanges) {
  const double big = std::numeric_limits<double>::max();
  // A range that overflows, and one below the values' precision.
  EXPECT_EQ(RenderLearningCurves({{"x", 0, 0, -big}, {"x", 1, 0, big}}, {"x"}).height, 300);
  EXPECT_EQ(RenderLearningCurves({{"x", 0, 0, 1e17}, {"x", 1, 0, 1e17 + 16}}, {"x"}).height, 300);
}

TEST(LearningCurvePlotTest, DrawsASinglePointAndAFlatLine) {
  const envs::Image point = RenderLearningCurves({{"x", 5, 0, 3.0}}, {"x"});
  EXPECT_GT(CountColour(point, kCurveColour, 0, point.height), 10);  // its marker
  const envs::Image flat =
      RenderLearningCurves({{"x", 0, 0, 0.0}, {"x", 1'000'000, 0, 0.0}}, {"x"});
  EXPECT_GT(CountColour(flat, kCurveColour, 0, flat.height), 500);
}

// Pixels in [x0, x1) x [y0, y1) within `tolerance` of `colour` on every channel.
int CountNear(const envs::Image& image, const std::array<std::uint8_t, 3>& colour, int tolerance,
              int x0, int y0, int x1, int y1) {
  int count = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      const std::uint8_t* p = &image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3];
      bool near = true;
      for (int c = 0; c < 3; ++c) near = near && std::abs(p[c] - colour[c]) <= tolerance;
      count += near;
    }
  }
  return count;
}

// Dark pixels (text, axes: every channel below 128, which the curve's blue
// and the band are not) in [x0, x1) x [y0, y1).
int CountDark(const envs::Image& image, int x0, int y0, int x1, int y1) {
  return CountNear(image, {63, 63, 63}, 64, x0, y0, x1, y1);
}

// A run that stops at its target, as launch/run_monitor.cc records it: 18
// evaluations stopped early, then the one that ran all episodes.
std::vector<Scalar> Evaluations() {
  std::vector<Scalar> scalars;
  for (int i = 0; i < 19; ++i) {
    const std::int64_t step = 2'000 * (i + 1);
    const double wall = 1.7e9 + 0.5 * i * i;  // evaluations slow down as episodes grow
    const double mean = 20 + 25.0 * i;
    scalars.push_back({i < 18 ? "eval/stopped_mean_return" : "eval/mean_return", step, wall, mean});
    scalars.push_back({"eval/min_return", step, wall, mean - 15});
    scalars.push_back({"eval/max_return", step, wall, mean + 30});
    scalars.push_back({"learner/loss", step, wall, 1.0 / (1 + i)});
  }
  return scalars;
}

TEST(PlotPanelsTest, PutsEveryEvaluationOnTheReturnPanelWithItsBand) {
  const std::vector<PlotPanel> panels = BuildPlotPanels(Evaluations(), {}, PlotX::kEnvSteps);
  // The companions draw on the mean_return panel rather than on their own.
  ASSERT_EQ(panels.size(), 2u);
  const PlotPanel& eval = panels[0];
  EXPECT_EQ(eval.tag, "eval/mean_return");
  EXPECT_TRUE(eval.evaluations);
  ASSERT_EQ(eval.points.size(), 19u);
  ASSERT_EQ(eval.band.size(), 19u);
  for (std::size_t i = 0; i < 19; ++i) {
    EXPECT_EQ(eval.points[i].partial, i < 18) << i;
    EXPECT_EQ(eval.points[i].x, 2'000.0 * (i + 1));
    EXPECT_EQ(eval.band[i].x, eval.points[i].x);
    EXPECT_EQ(eval.band[i].low, eval.points[i].y - 15);
    EXPECT_EQ(eval.band[i].high, eval.points[i].y + 30);
  }
  EXPECT_FALSE(panels[1].evaluations);
  EXPECT_TRUE(panels[1].band.empty());

  // Asked for by name, the panel is there even before any evaluation ran
  // all its episodes.
  std::vector<Scalar> stopped_only = Evaluations();
  std::erase_if(stopped_only, [](const Scalar& s) { return s.tag == "eval/mean_return"; });
  const auto only = BuildPlotPanels(stopped_only, {"eval/mean_return"}, PlotX::kEnvSteps);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].points.size(), 18u);
}

TEST(PlotPanelsTest, TimeAxisCountsSecondsFromTheFirstRecord) {
  EXPECT_EQ(XAxisTitle(PlotX::kEnvSteps), "env steps");
  EXPECT_EQ(XAxisTitle(PlotX::kWallTime), "wall time (s)");
  const auto panels = BuildPlotPanels(Evaluations(), {"learner/loss"}, PlotX::kWallTime);
  ASSERT_EQ(panels.size(), 1u);
  ASSERT_EQ(panels[0].points.size(), 19u);
  for (std::size_t i = 0; i < 19; ++i) EXPECT_DOUBLE_EQ(panels[0].points[i].x, 0.5 * i * i);
}

TEST(PlotPanelsTest, AxisTitlesCarryUnits) {
  EXPECT_EQ(YAxisTitle("eval/mean_return"), "return (sum of rewards per episode)");
  EXPECT_EQ(YAxisTitle("actors/env_steps_per_sec"), "env steps per second");
  EXPECT_EQ(YAxisTitle("learner/updates_per_sec"), "updates per second");
  EXPECT_EQ(YAxisTitle("replay/size"), "size");
}

TEST(LearningCurvePlotTest, DrawsTextTheBandAndEveryEvaluation) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const std::string path = (dir / "curves.png").string();
  PlotLearningCurves(Evaluations(), {"eval/mean_return", "learner/loss"}, path,
                     {.width = 900, .height_per_panel = 260});
  const envs::Image image = ReadPng(path);
  ASSERT_EQ(image.width, 900);
  ASSERT_EQ(image.height, 2 * 260);
  // The band: the curve's colour at kBandOpacity over white, in the top
  // panel's plot area only.
  std::array<std::uint8_t, 3> band{};
  for (int c = 0; c < 3; ++c) {
    band[c] = static_cast<std::uint8_t>(std::lround(255 - kBandOpacity * (255 - kCurveColour[c])));
  }
  EXPECT_GT(CountNear(image, band, 3, 100, 40, 880, 220), 2'000);
  // (Below, only the anti-aliased edges of the loss curve come near it.)
  EXPECT_LT(CountNear(image, band, 3, 0, 260, 900, 520), 200);
  // Curves and markers in both panels.
  EXPECT_GT(CountColour(image, kCurveColour, 0, 260), 300);
  EXPECT_GT(CountColour(image, kCurveColour, 260, 520), 300);
  // Text: the titles (top left), the legend (top right), the x axis title
  // (bottom centre), the y axis title (left edge) of each panel.
  for (int top : {0, 260}) {
    EXPECT_GT(CountDark(image, 0, top, 200, top + 30), 50) << top;
    EXPECT_GT(CountDark(image, 500, top, 900, top + 30), 50) << top;
    EXPECT_GT(CountDark(image, 350, top + 235, 600, top + 260), 50) << top;
    EXPECT_GT(CountDark(image, 0, top + 40, 25, top + 220), 50) << top;
  }
}

TEST(LearningCurvePlotTest, TimeAxisChangesTheDrawing) {
  const std::vector<Scalar> scalars = Evaluations();
  const envs::Image steps = RenderLearningCurves(scalars, {"learner/loss"});
  const envs::Image time = RenderLearningCurves(scalars, {"learner/loss"}, {.x = PlotX::kWallTime});
  ASSERT_EQ(steps.rgb.size(), time.rgb.size());
  EXPECT_NE(steps.rgb, time.rgb);
  // Both still draw the curve.
  EXPECT_GT(CountColour(time, kCurveColour, 0, time.height), 300);
}

TEST(LearningCurvePlotTest, NamesTheFileItCannotWrite) {
  const std::string path = "/nonexistent-rlswarm-dir/curves.png";
  try {
    PlotLearningCurves(Curves(), {}, path);
    FAIL() << "no Unavailable";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rlswarm::observe
