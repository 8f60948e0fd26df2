#include "apps/learning_curve_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

#include "apps/png_writer.h"
#include "common/errors.h"

namespace rlswarm::apps {
namespace {

using Colour = std::array<std::uint8_t, 3>;
constexpr Colour kWhite = {255, 255, 255};
constexpr Colour kBlack = {0, 0, 0};
constexpr Colour kGrid = {225, 225, 225};
constexpr Colour kTextGrey = {90, 90, 90};

// A 5x7 bitmap font: seven rows per glyph, bit 4 the leftmost pixel.
struct Glyph {
  char c;
  std::array<std::uint8_t, 7> rows;
};
constexpr Glyph kFont[] = {
    {' ', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'?', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}},
};
constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;
constexpr int kGlyphAdvance = kGlyphWidth + 1;
constexpr std::size_t kMaxMarkedPoints = 50;
constexpr int kMaxTicks = 20;

const Glyph& GlyphFor(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (const Glyph& glyph : kFont) {
    if (glyph.c == c) return glyph;
  }
  return GlyphFor('?');
}

// An RGB canvas; every drawing call clips to `clip` (the whole canvas unless
// set), so callers never check bounds.
class Canvas {
 public:
  Canvas(int width, int height) {
    image_.width = width;
    image_.height = height;
    image_.rgb.assign(static_cast<std::size_t>(width) * height * 3, 255);
    ResetClip();
  }

  void SetClip(int x0, int y0, int x1, int y1) { clip_ = {x0, y0, x1, y1}; }
  void ResetClip() { clip_ = {0, 0, image_.width - 1, image_.height - 1}; }

  void Pixel(int x, int y, const Colour& colour) {
    if (x < clip_[0] || y < clip_[1] || x > clip_[2] || y > clip_[3]) return;
    std::uint8_t* p = &image_.rgb[(static_cast<std::size_t>(y) * image_.width + x) * 3];
    std::copy(colour.begin(), colour.end(), p);
  }

  // Inclusive corners.
  void FillRect(int x0, int y0, int x1, int y1, const Colour& colour) {
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) Pixel(x, y, colour);
    }
  }

  // Bresenham, `thickness` pixels wide (a square pen).
  void Line(int x0, int y0, int x1, int y1, const Colour& colour, int thickness = 1) {
    const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int error = dx + dy;
    for (;;) {
      FillRect(x0, y0, x0 + thickness - 1, y0 + thickness - 1, colour);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * error;
      if (e2 >= dy) error += dy, x0 += sx;
      if (e2 <= dx) error += dx, y0 += sy;
    }
  }

  // `text` with its top-left corner at (x, y), each font pixel scale x scale.
  void Text(int x, int y, std::string_view text, int scale, const Colour& colour) {
    for (char c : text) {
      const Glyph& glyph = GlyphFor(c);
      for (int row = 0; row < kGlyphHeight; ++row) {
        for (int col = 0; col < kGlyphWidth; ++col) {
          if (glyph.rows[row] & (0x10 >> col)) {
            FillRect(x + col * scale, y + row * scale, x + (col + 1) * scale - 1,
                     y + (row + 1) * scale - 1, colour);
          }
        }
      }
      x += kGlyphAdvance * scale;
    }
  }

  envs::Image Take() { return std::move(image_); }

 private:
  envs::Image image_;
  std::array<int, 4> clip_{};
};

int TextWidth(std::string_view text, int scale) {
  return text.empty() ? 0 : (static_cast<int>(text.size()) * kGlyphAdvance - 1) * scale;
}

// Tick positions at a "nice" step (1, 2 or 5 times a power of ten) giving
// about `target` ticks in [lo, hi] (Heckbert, "Nice numbers for graph
// labels", Graphics Gems, 1990).
struct Ticks {
  double step = 1;
  std::vector<double> values;
};
Ticks NiceTicks(double lo, double hi, int target) {
  Ticks ticks;
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double normalized = raw / magnitude;
  ticks.step = (normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10) * magnitude;
  // Counted, not accumulated: where the step is below the values' precision
  // (1e17 + 2) adding it would never reach `hi`.
  const double first = std::ceil(lo / ticks.step), last = std::floor(hi / ticks.step + 1e-9);
  for (int i = 0; i < kMaxTicks && first + i <= last; ++i) {
    const double v = (first + i) * ticks.step;
    ticks.values.push_back(std::abs(v) < ticks.step * 1e-9 ? 0.0 : v);  // no "-0"
  }
  return ticks;
}

// Just enough digits to tell ticks `step` apart: fixed point for ordinary
// magnitudes, else a compact exponent form ("1.5e6", "2e-5").
std::string FormatTick(double value, double step, double max_abs) {
  char buffer[64];
  const int step_exponent = static_cast<int>(std::floor(std::log10(step)));
  if (max_abs >= 1e6 || step < 1e-3) {
    const int max_exponent = static_cast<int>(std::floor(std::log10(std::max(max_abs, step))));
    const int digits = std::clamp(max_exponent - step_exponent, 0, 6);
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits, value);
    const std::string text(buffer);
    const std::size_t e = text.find('e');
    std::string mantissa = text.substr(0, e);
    if (mantissa.find('.') != std::string::npos) {
      mantissa.erase(mantissa.find_last_not_of('0') + 1);
      if (mantissa.back() == '.') mantissa.pop_back();
    }
    std::string exponent = text.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent.erase(0, exponent.find_first_not_of("+-0"));
    if (exponent.empty() || mantissa == "0" || mantissa == "-0") return mantissa;
    return mantissa + "e" + (negative ? "-" : "") + exponent;
  }
  std::snprintf(buffer, sizeof(buffer), "%.*f", std::max(0, -step_exponent), value);
  return buffer;
}

// [lo, hi] widened when it is empty.
std::pair<double, double> Range(double lo, double hi) {
  if (hi > lo) return {lo, hi};
  const double half = std::max(1.0, std::abs(lo) * 0.1);
  return {lo - half, hi + half};
}

void DrawPanel(Canvas& canvas, const std::string& tag,
               std::vector<std::pair<double, double>> points,  // (step, value), finite
               int top, int width, int height, int scale) {
  const int text_height = kGlyphHeight * scale;
  const int title_top = top + 8;
  const int plot_top = title_top + text_height + 8;
  const int plot_bottom = top + height - text_height - 14;
  const int plot_right = width - 24;
  canvas.Text(8, title_top, tag, scale, kBlack);
  if (points.empty()) {
    canvas.Text(8, plot_top + 8, "no finite values", scale, kTextGrey);
    return;
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double y_lo = points[0].second, y_hi = y_lo;
  for (const auto& [x, y] : points) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  auto [x_min, x_max] = Range(points.front().first, points.back().first);
  auto [y_min, y_max] = Range(y_lo, y_hi);
  const double pad = (y_max - y_min) * 0.05;
  y_min -= pad, y_max += pad;
  if (!std::isfinite(x_max - x_min) || !std::isfinite(y_max - y_min)) {
    canvas.Text(8, plot_top + 8, "values too large to plot", scale, kTextGrey);
    return;
  }
  const Ticks x_ticks = NiceTicks(x_min, x_max, 6);
  const Ticks y_ticks = NiceTicks(y_min, y_max, 4);
  const double x_abs = std::max(std::abs(x_min), std::abs(x_max));
  const double y_abs = std::max(std::abs(y_min), std::abs(y_max));

  // The left margin fits the widest y label.
  std::vector<std::string> y_labels;
  int label_width = 0;
  for (double v : y_ticks.values) {
    y_labels.push_back(FormatTick(v, y_ticks.step, y_abs));
    label_width = std::max(label_width, TextWidth(y_labels.back(), scale));
  }
  const int plot_left = 8 + label_width + 8;
  const int plot_width = plot_right - plot_left, plot_height = plot_bottom - plot_top;
  if (plot_width < 10 || plot_height < 10) return;  // labels ate the panel; title only
  auto to_px = [&](double x) {
    return plot_left + static_cast<int>(std::lround((x - x_min) / (x_max - x_min) * plot_width));
  };
  auto to_py = [&](double y) {
    return plot_bottom - static_cast<int>(std::lround((y - y_min) / (y_max - y_min) * plot_height));
  };

  for (std::size_t i = 0; i < y_ticks.values.size(); ++i) {
    const int py = to_py(y_ticks.values[i]);
    canvas.Line(plot_left, py, plot_right, py, kGrid);
    canvas.Line(plot_left - 4, py, plot_left, py, kBlack);
    canvas.Text(plot_left - 8 - TextWidth(y_labels[i], scale), py - text_height / 2, y_labels[i],
                scale, kBlack);
  }
  int last_label_end = -1;
  for (double v : x_ticks.values) {
    const int px = to_px(v);
    canvas.Line(px, plot_top, px, plot_bottom, kGrid);
    canvas.Line(px, plot_bottom, px, plot_bottom + 4, kBlack);
    const std::string label = FormatTick(v, x_ticks.step, x_abs);
    const int label_left =
        std::clamp(px - TextWidth(label, scale) / 2, 0, width - TextWidth(label, scale) - 1);
    if (label_left <= last_label_end + 2 * scale * kGlyphAdvance) continue;  // would overlap
    canvas.Text(label_left, plot_bottom + 8, label, scale, kBlack);
    last_label_end = label_left + TextWidth(label, scale);
  }
  canvas.Line(plot_left, plot_top, plot_left, plot_bottom, kBlack);
  canvas.Line(plot_left, plot_bottom, plot_right, plot_bottom, kBlack);

  canvas.SetClip(plot_left + 1, plot_top, plot_right, plot_bottom - 1);
  for (std::size_t i = 1; i < points.size(); ++i) {
    canvas.Line(to_px(points[i - 1].first), to_py(points[i - 1].second), to_px(points[i].first),
                to_py(points[i].second), kCurveColour, 2);
  }
  if (points.size() <= kMaxMarkedPoints) {
    for (const auto& [x, y] : points) {
      canvas.FillRect(to_px(x) - 2, to_py(y) - 2, to_px(x) + 2, to_py(y) + 2, kCurveColour);
    }
  }
  canvas.ResetClip();
}

}  // namespace

envs::Image RenderLearningCurves(const std::vector<Scalar>& scalars,
                                 const std::vector<std::string>& tags, int width,
                                 int height_per_panel) {
  if (width < 200 || width > 8000 || height_per_panel < 100 || height_per_panel > 4000) {
    throw InvalidArgument("plot size " + std::to_string(width) + "x" +
                          std::to_string(height_per_panel) +
                          " per panel is outside [200, 8000] x [100, 4000]");
  }
  std::vector<std::string> available;  // in order of first appearance
  for (const Scalar& s : scalars) {
    if (std::find(available.begin(), available.end(), s.tag) == available.end()) {
      available.push_back(s.tag);
    }
  }
  std::vector<std::string> panels;
  for (const std::string& tag : tags.empty() ? available : tags) {
    const bool present = std::find(available.begin(), available.end(), tag) != available.end();
    if (present && std::find(panels.begin(), panels.end(), tag) == panels.end()) {
      panels.push_back(tag);
    }
  }
  if (panels.empty()) {
    std::vector<std::string> sorted = available;
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (const std::string& tag : sorted) list += (list.empty() ? "" : ", ") + tag;
    throw InvalidArgument("none of the requested tags is in the scalars; available: " +
                          (list.empty() ? std::string("(none)") : list));
  }
  const long long pixels =
      static_cast<long long>(width) * height_per_panel * static_cast<long long>(panels.size());
  if (pixels > 64LL * 1000 * 1000) {
    throw InvalidArgument(std::to_string(panels.size()) + " panels of " + std::to_string(width) +
                          "x" + std::to_string(height_per_panel) + " exceed 64 megapixels");
  }

  const int scale = width >= 800 && height_per_panel >= 200 ? 2 : 1;
  Canvas canvas(width, height_per_panel * static_cast<int>(panels.size()));
  for (std::size_t i = 0; i < panels.size(); ++i) {
    std::vector<std::pair<double, double>> points;
    for (const Scalar& s : scalars) {
      if (s.tag == panels[i] && std::isfinite(s.value)) {
        points.emplace_back(static_cast<double>(s.step), s.value);
      }
    }
    const int top = static_cast<int>(i) * height_per_panel;
    DrawPanel(canvas, panels[i], std::move(points), top, width, height_per_panel, scale);
    if (i > 0) canvas.Line(0, top, width - 1, top, kGrid);  // panel separator
  }
  return canvas.Take();
}

void PlotLearningCurves(const std::vector<Scalar>& scalars, const std::vector<std::string>& tags,
                        const std::string& png_path, int width, int height_per_panel) {
  WritePng(png_path, RenderLearningCurves(scalars, tags, width, height_per_panel));
}

}  // namespace rlswarm::apps
