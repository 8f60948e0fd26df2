#pragma once

// Small statistics for Table::Info(): throughput over a sliding window, the
// staleness of sampled items, and a histogram of priorities. None is thread
// safe: the Table updates them under its lock, and Info() copies them out
// before doing anything expensive (sorting) without the lock.

#include <cstdint>
#include <vector>

namespace rlswarm::replay {

// Events per second over the last kWindowSeconds whole seconds plus the
// current partial one (or since `start_ns`, if that is more recent).
class RateMeter {
 public:
  static constexpr int kWindowSeconds = 10;

  explicit RateMeter(std::int64_t start_ns) : start_ns_(start_ns) {}

  void Add(std::int64_t count, std::int64_t now_ns);
  double PerSecond(std::int64_t now_ns) const;

 private:
  static constexpr int kBuckets = kWindowSeconds + 1;
  std::int64_t counts_[kBuckets] = {};
  std::int64_t seconds_[kBuckets] = {};  // which second each bucket counts
  std::int64_t start_ns_;
};

// Staleness of sampled items: for each of the last `window` sampled items,
// its age (sample time - insert time) and its policy lag (the sampler's
// policy version - the version that produced the item).
class StalenessWindow {
 public:
  explicit StalenessWindow(std::int64_t window);

  void Record(std::int64_t age_ns, std::int64_t version_lag);
  // Copies for Summarize(); O(window).
  std::vector<std::int64_t> Ages() const { return ages_; }
  std::vector<std::int64_t> Lags() const { return lags_; }
  std::int64_t recorded() const { return recorded_; }

 private:
  std::int64_t window_;
  std::int64_t next_ = 0;
  std::int64_t recorded_ = 0;  // ever
  std::vector<std::int64_t> ages_;
  std::vector<std::int64_t> lags_;
};

struct Percentiles {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// Nearest-rank percentiles (sorts `values`); all 0 for no values.
Percentiles ComputePercentiles(std::vector<std::int64_t> values, double scale = 1.0);

// Priorities of the live items in power-of-two bins: bin i counts
// priorities in [2^(kMinExponent + i), 2^(kMinExponent + i + 1)); the first
// bin also counts smaller positive priorities and the last bin larger ones.
// Priority 0 is counted apart, in `zeros`. Kept up to date on every insert,
// update and removal (O(1) each), so reading it costs nothing; `sum` is a
// running sum, so rounding can accumulate in its last bits.
struct PriorityHistogram {
  static constexpr int kMinExponent = -20;
  static constexpr int kMaxExponent = 20;
  static constexpr int kNumBins = kMaxExponent - kMinExponent;

  std::int64_t zeros = 0;
  std::vector<std::int64_t> counts = std::vector<std::int64_t>(kNumBins, 0);
  std::int64_t total = 0;
  double sum = 0;

  void Add(double priority);
  void Remove(double priority);
  static int BinOf(double priority);  // -1 for 0
  static double BinLower(int bin);    // 2^(kMinExponent + bin)
};

}  // namespace rlswarm::replay
