#include "replay/stats.h"

#include <algorithm>
#include <cmath>

namespace rlswarm::replay {
namespace {
constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
}

void RateMeter::Add(std::int64_t count, std::int64_t now_ns) {
  const std::int64_t second = now_ns / kNanosPerSecond;
  const int bucket = static_cast<int>(second % kBuckets);
  if (seconds_[bucket] != second) {
    seconds_[bucket] = second;
    counts_[bucket] = 0;
  }
  counts_[bucket] += count;
}

double RateMeter::PerSecond(std::int64_t now_ns) const {
  const std::int64_t second = now_ns / kNanosPerSecond;
  const std::int64_t oldest = second - kWindowSeconds;
  std::int64_t total = 0;
  for (int i = 0; i < kBuckets; ++i) {
    if (seconds_[i] >= oldest && seconds_[i] <= second) total += counts_[i];
  }
  const std::int64_t since = std::max(start_ns_, oldest * kNanosPerSecond);
  const std::int64_t span_ns = std::max<std::int64_t>(now_ns - since, 1'000'000);  // >= 1 ms
  return static_cast<double>(total) * 1e9 / static_cast<double>(span_ns);
}

StalenessWindow::StalenessWindow(std::int64_t window) : window_(std::max<std::int64_t>(window, 1)) {
  ages_.reserve(window_);
  lags_.reserve(window_);
}

void StalenessWindow::Record(std::int64_t age_ns, std::int64_t version_lag) {
  if (static_cast<std::int64_t>(ages_.size()) < window_) {
    ages_.push_back(age_ns);
    lags_.push_back(version_lag);
  } else {
    ages_[next_] = age_ns;
    lags_[next_] = version_lag;
    next_ = (next_ + 1) % window_;
  }
  ++recorded_;
}

Percentiles ComputePercentiles(std::vector<std::int64_t> values, double scale) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const auto rank = [&](double q) {
    // Nearest rank: the smallest value with at least q of the values <= it.
    auto index = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    index = std::clamp<std::size_t>(index, 1, values.size()) - 1;
    return static_cast<double>(values[index]) * scale;
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = static_cast<double>(values.back()) * scale;
  return p;
}

int PriorityHistogram::BinOf(double priority) {
  if (priority == 0) return -1;
  int exponent = 0;
  std::frexp(priority, &exponent);  // priority in [2^(exponent-1), 2^exponent)
  return std::clamp(exponent - 1 - kMinExponent, 0, kNumBins - 1);
}

void PriorityHistogram::Add(double priority) {
  ++total;
  sum += priority;
  const int bin = BinOf(priority);
  ++(bin < 0 ? zeros : counts[bin]);
}

void PriorityHistogram::Remove(double priority) {
  --total;
  sum = total == 0 ? 0.0 : sum - priority;
  const int bin = BinOf(priority);
  --(bin < 0 ? zeros : counts[bin]);
}

double PriorityHistogram::BinLower(int bin) { return std::ldexp(1.0, kMinExponent + bin); }

}  // namespace rlswarm::replay
