#pragma once

// RateLimiter: keeps the ratio of samples to inserts of a table near
// `samples_per_insert`, with Reverb's semantics (reverb/cc/rate_limiter.h):
//
//   cursor = inserts * samples_per_insert - samples
//   an insert may proceed while size < min_size_to_sample (inserts are free
//     until the table holds min_size_to_sample items), or while
//     cursor + samples_per_insert <= max_diff;
//   a sample may proceed while size >= min_size_to_sample and
//     cursor - 1 >= min_diff.
//
// Batches: a batch of n items is admitted when its first item would be, and
// then moves the cursor by all n. The cursor may therefore overshoot a bound
// by at most n - 1 items' worth, and later calls wait until it is back. This
// is Reverb's per-item rule whenever n = 1, keeps the long-run ratio, and,
// unlike requiring room for the whole batch, never deadlocks when a batch is
// larger than the error buffer (sample batches of 256 with an error buffer of
// 100 are common).
//
// Global ratio (hook, not wired yet): SetRemoteCounts() adds the inserts and
// samples of the other shards to the cursor, so a service that gossips shard
// counters can enforce one ratio over all shards. min_size_to_sample stays
// per shard.
//
// Not thread safe: the owning Table holds its lock around every call and
// does the waiting (see Table).

#include <cstdint>
#include <limits>

namespace rlswarm::replay {

struct RateLimiterOptions {
  double samples_per_insert = 1.0;
  std::int64_t min_size_to_sample = 1;
  double min_diff = std::numeric_limits<double>::lowest();
  double max_diff = std::numeric_limits<double>::max();

  // Samples may start once the table holds `min_size` items; the ratio is
  // not limited (Reverb's MinSize).
  static RateLimiterOptions MinSize(std::int64_t min_size);
  // Reverb's SampleToInsertRatio: the cursor stays within +-error_buffer of
  // samples_per_insert * min_size_to_sample.
  static RateLimiterOptions SampleToInsertRatio(double samples_per_insert,
                                                std::int64_t min_size_to_sample,
                                                double error_buffer);

  // Throws InvalidArgument unless samples_per_insert is finite and > 0,
  // min_size_to_sample >= 1, min_diff <= max_diff, the window
  // max_diff - min_diff is at least 2 * max(1, samples_per_insert) (a
  // smaller one can block inserts and samples for good; Reverb's rule), and
  // min_diff <= samples_per_insert * min_size_to_sample (else the first
  // sample would wait for inserts that the table does not need).
  void Validate() const;
};

// The counters a checkpoint saves.
struct RateLimiterCounts {
  std::int64_t inserts = 0;
  std::int64_t samples = 0;
  std::int64_t deletes = 0;
};

class RateLimiter {
 public:
  explicit RateLimiter(const RateLimiterOptions& options) : options_(options) {}

  // Whether an insert or sample (of any batch size, see above) may start now.
  bool CanInsert() const;
  bool CanSample() const;

  void OnInserts(std::int64_t n) { counts_.inserts += n; }
  void OnSamples(std::int64_t n) { counts_.samples += n; }
  // Items left the table (FIFO eviction, max_times_sampled).
  void OnDeletes(std::int64_t n) { counts_.deletes += n; }

  // New parameters on a live table; the counters are kept. options must be
  // valid.
  void Reconfigure(const RateLimiterOptions& options) { options_ = options; }
  // Global-ratio hook: the inserts and samples of every other shard.
  void SetRemoteCounts(std::int64_t inserts, std::int64_t samples) {
    remote_inserts_ = inserts;
    remote_samples_ = samples;
  }

  double Cursor() const;
  std::int64_t size() const { return counts_.inserts - counts_.deletes; }
  const RateLimiterOptions& options() const { return options_; }
  const RateLimiterCounts& counts() const { return counts_; }
  void RestoreCounts(const RateLimiterCounts& counts) { counts_ = counts; }

 private:
  RateLimiterOptions options_;
  RateLimiterCounts counts_;
  std::int64_t remote_inserts_ = 0;
  std::int64_t remote_samples_ = 0;
};

}  // namespace rlswarm::replay
