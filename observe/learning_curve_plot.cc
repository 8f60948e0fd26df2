#include "observe/learning_curve_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <utility>

#include "common/errors.h"
#include "observe/png_writer.h"

namespace rlswarm::observe {
namespace {

constexpr std::size_t kMaxMarkedPoints = 50;
constexpr int kMaxTicks = 20;
constexpr char kFontFamily[] = "sans-serif";  // fontconfig's choice (DejaVu Sans on Debian)

struct Colour {
  double r, g, b;
};
constexpr Colour kWhite = {1, 1, 1};
constexpr Colour kBlack = {0, 0, 0};
constexpr Colour kText = {0.1, 0.1, 0.1};
constexpr Colour kGreyText = {0.4, 0.4, 0.4};
constexpr Colour kGrid = {0.88, 0.88, 0.88};
constexpr Colour kCurve = {kCurveColour[0] / 255.0, kCurveColour[1] / 255.0,
                           kCurveColour[2] / 255.0};

// An RGB image surface and its context; Take() copies the pixels out.
class CairoCanvas {
 public:
  CairoCanvas(int width, int height)
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height)),
        cr_(cairo_create(surface_)) {
    if (cairo_status(cr_) != CAIRO_STATUS_SUCCESS) {
      const std::string why = cairo_status_to_string(cairo_status(cr_));
      cairo_destroy(cr_);
      cairo_surface_destroy(surface_);
      throw ResourceExhausted("cairo cannot make a " + std::to_string(width) + "x" +
                              std::to_string(height) + " image: " + why);
    }
  }
  ~CairoCanvas() {
    cairo_destroy(cr_);
    cairo_surface_destroy(surface_);
  }
  CairoCanvas(const CairoCanvas&) = delete;
  CairoCanvas& operator=(const CairoCanvas&) = delete;

  cairo_t* cr() const { return cr_; }

  envs::Image Take() {
    if (cairo_status(cr_) != CAIRO_STATUS_SUCCESS) {
      throw Internal(std::string("cairo failed drawing the plot: ") +
                     cairo_status_to_string(cairo_status(cr_)));
    }
    cairo_surface_flush(surface_);
    envs::Image image;
    image.width = cairo_image_surface_get_width(surface_);
    image.height = cairo_image_surface_get_height(surface_);
    image.rgb.resize(static_cast<std::size_t>(image.width) * image.height * 3);
    const unsigned char* data = cairo_image_surface_get_data(surface_);
    const int stride = cairo_image_surface_get_stride(surface_);
    std::uint8_t* out = image.rgb.data();
    for (int y = 0; y < image.height; ++y) {
      // RGB24: one native-endian 32-bit word per pixel, 0x00RRGGBB.
      const auto* row = reinterpret_cast<const std::uint32_t*>(data + y * stride);
      for (int x = 0; x < image.width; ++x) {
        *out++ = static_cast<std::uint8_t>(row[x] >> 16);
        *out++ = static_cast<std::uint8_t>(row[x] >> 8);
        *out++ = static_cast<std::uint8_t>(row[x]);
      }
    }
    return image;
  }

 private:
  cairo_surface_t* surface_;
  cairo_t* cr_;
};

void SetColour(cairo_t* cr, const Colour& c, double alpha = 1) {
  cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

void SetFont(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFontFamily, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double TextWidth(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t extents;
  cairo_text_extents(cr, text.c_str(), &extents);
  return extents.x_advance;
}

enum class Align { kLeft, kCentre, kRight };

// `text` on `baseline`, its left end, centre or right end at x.
void DrawText(cairo_t* cr, const std::string& text, double x, double baseline, Align align,
              const Colour& colour) {
  const double width = TextWidth(cr, text);
  if (align == Align::kCentre) x -= width / 2;
  if (align == Align::kRight) x -= width;
  SetColour(cr, colour);
  cairo_move_to(cr, x, baseline);
  cairo_show_text(cr, text.c_str());
}

// A 1-pixel line on pixel centres, so that it is crisp rather than two
// half-grey rows.
void CrispLine(cairo_t* cr, double x0, double y0, double x1, double y1, const Colour& colour) {
  SetColour(cr, colour);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, std::floor(x0) + 0.5, std::floor(y0) + 0.5);
  cairo_line_to(cr, std::floor(x1) + 0.5, std::floor(y1) + 0.5);
  cairo_stroke(cr);
}

void Marker(cairo_t* cr, double x, double y, double radius, bool hollow) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, radius, 0, 2 * std::numbers::pi);
  SetColour(cr, hollow ? kWhite : kCurve);
  cairo_fill_preserve(cr);
  SetColour(cr, kCurve);
  cairo_set_line_width(cr, 1.5);
  cairo_stroke(cr);
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

enum class LegendKind { kLine, kHollow, kBand };
struct LegendEntry {
  std::string label;
  LegendKind kind;
};

// The legend, right-aligned so that its right end is at `right`.
void DrawLegend(cairo_t* cr, const std::vector<LegendEntry>& entries, double right, double baseline,
                double font_size, double sample_width, double gap) {
  double x = right;
  for (const LegendEntry& e : entries) x -= sample_width + gap / 2 + TextWidth(cr, e.label) + gap;
  x += gap;
  const double mid = baseline - font_size * 0.35;
  for (const LegendEntry& e : entries) {
    const double centre = x + sample_width / 2;
    switch (e.kind) {
      case LegendKind::kLine:
        SetColour(cr, kCurve);
        cairo_set_line_width(cr, 2);
        cairo_move_to(cr, x, mid);
        cairo_line_to(cr, x + sample_width, mid);
        cairo_stroke(cr);
        break;
      case LegendKind::kHollow:
        Marker(cr, centre, mid, font_size * 0.3, true);
        break;
      case LegendKind::kBand:
        SetColour(cr, kCurve, kBandOpacity);
        cairo_rectangle(cr, x, mid - font_size * 0.4, sample_width, font_size * 0.8);
        cairo_fill(cr);
        break;
    }
    x += sample_width + gap / 2;
    DrawText(cr, e.label, x, baseline, Align::kLeft, kText);
    x += TextWidth(cr, e.label) + gap;
  }
}

double LegendWidth(cairo_t* cr, const std::vector<LegendEntry>& entries, double sample_width,
                   double gap) {
  double width = -gap;
  for (const LegendEntry& e : entries)
    width += sample_width + gap / 2 + TextWidth(cr, e.label) + gap;
  return std::max(0.0, width);
}

// Draws the panel's title and, beside it when it fits (else on a row of its
// own below), the legend of what the panel shows; returns the legend's
// baseline.
double DrawTitleAndLegend(cairo_t* cr, const PlotPanel& panel, double top, double width, double pad,
                          double font_size) {
  const double title_baseline = top + pad + font_size;
  SetFont(cr, font_size * 1.1, true);
  DrawText(cr, panel.tag, pad, title_baseline, Align::kLeft, kBlack);
  const double title_right = pad + TextWidth(cr, panel.tag);

  std::vector<LegendEntry> legend;
  const bool any_full = std::any_of(panel.points.begin(), panel.points.end(),
                                    [](const PlotPoint& p) { return !p.partial; });
  const bool any_partial = std::any_of(panel.points.begin(), panel.points.end(),
                                       [](const PlotPoint& p) { return p.partial; });
  if (any_full) legend.push_back({panel.curve_label, LegendKind::kLine});
  if (any_partial) legend.push_back({panel.partial_label, LegendKind::kHollow});
  if (!panel.band.empty()) legend.push_back({panel.band_label, LegendKind::kBand});
  SetFont(cr, font_size * 0.9);
  const double sample_width = font_size * 1.8, gap = font_size;
  // Beside the title when it fits, else on a row of its own below it.
  double legend_baseline = title_baseline;
  if (title_right + 2 * gap + LegendWidth(cr, legend, sample_width, gap) > width - pad) {
    legend_baseline += font_size * 1.4;
  }
  DrawLegend(cr, legend, width - pad, legend_baseline, font_size * 0.9, sample_width, gap);
  return legend_baseline;
}

// The smallest and largest x and y of the panel's points and band (which
// are not both empty).
struct DataBounds {
  double x_lo, x_hi, y_lo, y_hi;
};

DataBounds BoundsOf(const PlotPanel& panel) {
  double x_lo = panel.points.empty() ? panel.band.front().x : panel.points.front().x;
  double x_hi = x_lo, y_lo = panel.points.empty() ? panel.band.front().low : panel.points[0].y;
  double y_hi = y_lo;
  for (const PlotPoint& p : panel.points) {
    x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
    y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
  }
  for (const BandPoint& b : panel.band) {
    x_lo = std::min(x_lo, b.x), x_hi = std::max(x_hi, b.x);
    y_lo = std::min(y_lo, b.low), y_hi = std::max(y_hi, b.high);
  }
  return {x_lo, x_hi, y_lo, y_hi};
}

// Where the data goes: the plot's rectangle in pixels and the values its
// edges stand for.
struct PlotArea {
  double left, top, bottom, width, height;  // height = bottom - top
  double x_min, x_max, y_min, y_max;

  double Px(double x) const { return left + (x - x_min) / (x_max - x_min) * width; }
  double Py(double y) const { return bottom - (y - y_min) / (y_max - y_min) * height; }
};

// The band (min-max of evaluations), the curve and its markers, clipped to
// the plot area.
void DrawData(cairo_t* cr, const PlotPanel& panel, const PlotArea& area, double font_size) {
  auto to_px = [&](double x) { return area.Px(x); };
  auto to_py = [&](double y) { return area.Py(y); };
  cairo_save(cr);
  cairo_rectangle(cr, area.left + 1, area.top, area.width, area.height);
  cairo_clip(cr);
  SetColour(cr, kCurve, kBandOpacity);
  if (panel.band.size() == 1) {  // one evaluation: a bar rather than a polygon of no width
    const BandPoint& b = panel.band[0];
    cairo_rectangle(cr, to_px(b.x) - 4, to_py(b.high), 8, to_py(b.low) - to_py(b.high));
  } else if (!panel.band.empty()) {
    for (const BandPoint& b : panel.band) cairo_line_to(cr, to_px(b.x), to_py(b.high));
    for (auto it = panel.band.rbegin(); it != panel.band.rend(); ++it) {
      cairo_line_to(cr, to_px(it->x), to_py(it->low));
    }
    cairo_close_path(cr);
  }
  cairo_fill(cr);
  if (panel.points.size() > 1) {
    SetColour(cr, kCurve);
    cairo_set_line_width(cr, 2.5);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (const PlotPoint& p : panel.points) cairo_line_to(cr, to_px(p.x), to_py(p.y));
    cairo_stroke(cr);
  }
  if (panel.points.size() <= kMaxMarkedPoints || panel.evaluations) {
    const double radius = std::max(3.0, font_size * 0.3);
    for (const PlotPoint& p : panel.points) Marker(cr, to_px(p.x), to_py(p.y), radius, p.partial);
  }
  cairo_restore(cr);
}

void DrawPanel(cairo_t* cr, const PlotPanel& panel, const std::string& x_title, double top,
               double width, double height, double font_size) {
  const double pad = std::round(font_size * 0.7);
  const double legend_baseline = DrawTitleAndLegend(cr, panel, top, width, pad, font_size);
  const double plot_top = legend_baseline + pad;
  const double x_title_baseline = top + height - pad * 0.6;
  const double x_label_baseline = x_title_baseline - font_size - pad * 0.5;
  const double plot_bottom = x_label_baseline - font_size - 6;
  const double plot_right = width - pad - font_size;
  SetFont(cr, font_size);
  if (panel.points.empty() && panel.band.empty()) {
    DrawText(cr, "no finite values", pad, plot_top + font_size, Align::kLeft, kGreyText);
    return;
  }

  const DataBounds bounds = BoundsOf(panel);
  auto [x_min, x_max] = Range(bounds.x_lo, bounds.x_hi);
  auto [y_min, y_max] = Range(bounds.y_lo, bounds.y_hi);
  // Margins inside the axes, so that the first and last markers are whole.
  const double x_pad = (x_max - x_min) * 0.02, y_pad = (y_max - y_min) * 0.05;
  x_min -= x_pad, x_max += x_pad;
  y_min -= y_pad, y_max += y_pad;
  if (!std::isfinite(x_max - x_min) || !std::isfinite(y_max - y_min)) {
    DrawText(cr, "values too large to plot", pad, plot_top + font_size, Align::kLeft, kGreyText);
    return;
  }
  const Ticks x_ticks = NiceTicks(x_min, x_max, 6);
  const Ticks y_ticks = NiceTicks(y_min, y_max, 4);
  const double x_abs = std::max(std::abs(x_min), std::abs(x_max));
  const double y_abs = std::max(std::abs(y_min), std::abs(y_max));

  // The left margin fits the y axis title and the widest y label.
  std::vector<std::string> y_labels;
  double label_width = 0;
  for (double v : y_ticks.values) {
    y_labels.push_back(FormatTick(v, y_ticks.step, y_abs));
    label_width = std::max(label_width, TextWidth(cr, y_labels.back()));
  }
  const double y_title_baseline = pad + font_size;
  const double plot_left = std::round(y_title_baseline + pad * 0.8 + label_width + 6);
  const double plot_width = plot_right - plot_left, plot_height = plot_bottom - plot_top;
  if (plot_width < 10 || plot_height < 10) return;  // labels ate the panel; title only
  const PlotArea area{plot_left, plot_top, plot_bottom, plot_width, plot_height,
                      x_min,     x_max,    y_min,       y_max};
  auto to_px = [&](double x) { return area.Px(x); };
  auto to_py = [&](double y) { return area.Py(y); };

  // Axis titles: y rotated to read bottom to top, shrunk to the plot's height.
  {
    double size = font_size;
    const double title_width = TextWidth(cr, panel.y_title);
    if (title_width > plot_height) size *= plot_height / title_width;
    SetFont(cr, size);
    cairo_save(cr);
    cairo_move_to(cr, y_title_baseline,
                  plot_top + plot_height / 2 + TextWidth(cr, panel.y_title) / 2);
    cairo_rotate(cr, -std::numbers::pi / 2);
    SetColour(cr, kText);
    cairo_show_text(cr, panel.y_title.c_str());
    cairo_restore(cr);
    SetFont(cr, font_size);
    DrawText(cr, x_title, plot_left + plot_width / 2, x_title_baseline, Align::kCentre, kText);
  }

  for (std::size_t i = 0; i < y_ticks.values.size(); ++i) {
    const double py = to_py(y_ticks.values[i]);
    CrispLine(cr, plot_left, py, plot_right, py, kGrid);
    CrispLine(cr, plot_left - 4, py, plot_left, py, kBlack);
    DrawText(cr, y_labels[i], plot_left - 6, py + font_size * 0.35, Align::kRight, kText);
  }
  double last_label_end = -1e9;
  for (double v : x_ticks.values) {
    const double px = to_px(v);
    CrispLine(cr, px, plot_top, px, plot_bottom, kGrid);
    CrispLine(cr, px, plot_bottom, px, plot_bottom + 4, kBlack);
    const std::string label = FormatTick(v, x_ticks.step, x_abs);
    const double label_width_x = TextWidth(cr, label);
    const double left = std::clamp(px - label_width_x / 2, 0.0, width - label_width_x - 1);
    if (left <= last_label_end + font_size) continue;  // would crowd its neighbour
    DrawText(cr, label, left, x_label_baseline, Align::kLeft, kText);
    last_label_end = left + label_width_x;
  }
  CrispLine(cr, plot_left, plot_top, plot_left, plot_bottom, kBlack);
  CrispLine(cr, plot_left, plot_bottom, plot_right, plot_bottom, kBlack);
  DrawData(cr, panel, area, font_size);
}

}  // namespace

envs::Image RenderLearningCurves(const std::vector<Scalar>& scalars,
                                 const std::vector<std::string>& tags, const PlotOptions& options) {
  const int width = options.width, height_per_panel = options.height_per_panel;
  if (width < 200 || width > 8000 || height_per_panel < 100 || height_per_panel > 4000) {
    throw InvalidArgument("plot size " + std::to_string(width) + "x" +
                          std::to_string(height_per_panel) +
                          " per panel is outside [200, 8000] x [100, 4000]");
  }
  const std::vector<PlotPanel> panels = BuildPlotPanels(scalars, tags, options.x);
  const long long pixels =
      static_cast<long long>(width) * height_per_panel * static_cast<long long>(panels.size());
  if (pixels > 64LL * 1000 * 1000) {
    throw InvalidArgument(std::to_string(panels.size()) + " panels of " + std::to_string(width) +
                          "x" + std::to_string(height_per_panel) + " exceed 64 megapixels");
  }

  // Text in proportion to the panel, within what reads on a screen.
  const double font_size =
      std::clamp(std::round(std::min(width / 90.0, height_per_panel / 22.0)), 8.0, 18.0);
  const std::string x_title = XAxisTitle(options.x);
  CairoCanvas canvas(width, height_per_panel * static_cast<int>(panels.size()));
  cairo_t* cr = canvas.cr();
  SetColour(cr, kWhite);
  cairo_paint(cr);
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const double top = static_cast<double>(i) * height_per_panel;
    if (i > 0) CrispLine(cr, 0, top, width, top, kGrid);  // panel separator
    DrawPanel(cr, panels[i], x_title, top, width, height_per_panel, font_size);
  }
  return canvas.Take();
}

void PlotLearningCurves(const std::vector<Scalar>& scalars, const std::vector<std::string>& tags,
                        const std::string& png_path, const PlotOptions& options) {
  WritePng(png_path, RenderLearningCurves(scalars, tags, options));
}

}  // namespace rlswarm::observe
