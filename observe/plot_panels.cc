#include "observe/plot_panels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "common/errors.h"

namespace rlswarm::observe {
namespace {

constexpr std::string_view kMeanReturn = "mean_return";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "eval/mean_return" -> "eval/", "mean_return" -> ""; nullopt when `tag`
// is not a mean_return tag.
std::optional<std::string> EvaluationPrefix(const std::string& tag) {
  if (!EndsWith(tag, kMeanReturn)) return std::nullopt;
  std::string prefix = tag.substr(0, tag.size() - kMeanReturn.size());
  if (!prefix.empty() && prefix.back() != '/') return std::nullopt;
  return prefix;
}

struct Companions {
  std::string stopped, min, max;
};
Companions CompanionsOf(const std::string& prefix) {
  return {prefix + "stopped_mean_return", prefix + "min_return", prefix + "max_return"};
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::string XAxisTitle(PlotX x) { return x == PlotX::kWallTime ? "wall time (s)" : "env steps"; }

std::string YAxisTitle(const std::string& tag) {
  std::string name = tag.substr(tag.find_last_of('/') + 1);
  if (EndsWith(name, "return")) return "return (sum of rewards per episode)";
  if (name == "loss") return "loss (Huber TD error)";
  std::string unit;
  if (EndsWith(name, "_per_sec")) {
    name.erase(name.size() - 8);
    unit = " per second";
  }
  std::replace(name.begin(), name.end(), '_', ' ');
  return name + unit;
}

std::vector<PlotPanel> BuildPlotPanels(const std::vector<Scalar>& scalars,
                                       const std::vector<std::string>& tags, PlotX x) {
  std::vector<std::string> available;  // in order of first appearance
  for (const Scalar& s : scalars) {
    if (!Contains(available, s.tag)) available.push_back(s.tag);
  }
  // A mean_return panel is there when any of its evaluations is, even if
  // none of them ran all its episodes.
  auto present = [&](const std::string& tag) {
    const std::optional<std::string> prefix = EvaluationPrefix(tag);
    return Contains(available, tag) ||
           (prefix && Contains(available, CompanionsOf(*prefix).stopped));
  };
  std::vector<std::string> wanted;
  if (tags.empty()) {
    // A companion stands for its mean_return panel, which takes the place of
    // the first of them to appear.
    for (const std::string& tag : available) {
      std::string panel = tag;
      for (const std::string_view suffix : {"stopped_mean_return", "min_return", "max_return"}) {
        if (!EndsWith(tag, suffix)) continue;
        const std::string prefix = tag.substr(0, tag.size() - suffix.size());
        if ((prefix.empty() || prefix.back() == '/') &&
            (Contains(available, prefix + "mean_return") ||
             Contains(available, prefix + "stopped_mean_return"))) {
          panel = prefix + "mean_return";
        }
      }
      if (!Contains(wanted, panel)) wanted.push_back(panel);
    }
  } else {
    for (const std::string& tag : tags) {
      if (present(tag) && !Contains(wanted, tag)) wanted.push_back(tag);
    }
  }
  if (wanted.empty()) {
    std::vector<std::string> sorted = available;
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (const std::string& tag : sorted) list += (list.empty() ? "" : ", ") + tag;
    throw InvalidArgument("none of the requested tags is in the scalars; available: " +
                          (list.empty() ? std::string("(none)") : list));
  }

  // Wall time counts from the run's first record, so that a plot reads
  // "seconds into the run" rather than seconds since 1970.
  double t0 = std::numeric_limits<double>::infinity();
  for (const Scalar& s : scalars) {
    if (std::isfinite(s.wall_time)) t0 = std::min(t0, s.wall_time);
  }
  auto x_of = [&](const Scalar& s) {
    return x == PlotX::kWallTime ? s.wall_time - t0 : static_cast<double>(s.step);
  };
  auto by_x = [](const auto& a, const auto& b) { return a.x < b.x; };

  std::vector<PlotPanel> panels;
  for (const std::string& tag : wanted) {
    PlotPanel panel;
    panel.tag = tag;
    panel.y_title = YAxisTitle(tag);
    panel.curve_label = tag;
    const std::optional<std::string> prefix = EvaluationPrefix(tag);
    const Companions c = CompanionsOf(prefix.value_or(""));
    panel.evaluations = prefix && (Contains(available, c.stopped) || Contains(available, c.min));
    if (panel.evaluations) {
      panel.curve_label = "mean over all episodes";
      panel.partial_label = "stopped early: mean of the finished episodes";
      panel.band_label = "min\u2013max over episodes";
    }
    // The band pairs each evaluation's min with its max: written one after
    // the other at the same step, so the n-th min at a step goes with the
    // n-th max there.
    std::map<std::int64_t, std::deque<const Scalar*>> mins;
    for (const Scalar& s : scalars) {
      if (s.tag == tag && std::isfinite(s.value)) {
        panel.points.push_back({x_of(s), s.value, false});
      } else if (panel.evaluations && s.tag == c.stopped && std::isfinite(s.value)) {
        panel.points.push_back({x_of(s), s.value, true});
      } else if (panel.evaluations && s.tag == c.min) {
        mins[s.step].push_back(&s);
      } else if (panel.evaluations && s.tag == c.max) {
        auto it = mins.find(s.step);
        if (it == mins.end() || it->second.empty()) continue;
        const Scalar* low = it->second.front();
        it->second.pop_front();
        if (std::isfinite(low->value) && std::isfinite(s.value)) {
          panel.band.push_back({x_of(*low), low->value, s.value});
        }
      }
    }
    std::stable_sort(panel.points.begin(), panel.points.end(), by_x);
    std::stable_sort(panel.band.begin(), panel.band.end(), by_x);
    panels.push_back(std::move(panel));
  }
  return panels;
}

}  // namespace rlswarm::observe
