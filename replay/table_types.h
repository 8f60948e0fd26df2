#pragma once

// The plain types of Table's API: options, requests, results and info.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "replay/rate_limiter.h"
#include "replay/result.h"
#include "replay/selectors/interface.h"
#include "replay/signature.h"
#include "replay/stats.h"

namespace rlswarm::replay {

using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();
using WaiterId = std::uint64_t;

struct TableOptions {
  std::string name = "replay";
  Signature signature;
  std::int64_t capacity = 1'000'000;
  SelectorOptions selector;
  RateLimiterOptions rate_limiter;
  // An item is removed once sampled this many times; 0 means never.
  std::int64_t max_times_sampled = 0;
  // Seeds the sampling RNG; the same seed and calls give the same samples.
  std::uint64_t seed = 1;
  // Rows per copy-on-write chunk (rounded up to a power of two): the unit a
  // write copies while a checkpoint is being written.
  std::int64_t chunk_rows = 4096;
  // How many recent sampled items the staleness percentiles cover.
  std::int64_t staleness_window = 4096;
  // Fields stored as stacks of shared frames (see FramePool): each is
  // [stack, frame...], and a frame that several items hold (a frame stack's
  // overlap with the next step's, a transition's next observation that is a
  // later transition's observation) is stored once. Samples hold the whole
  // fields as usual. Empty: every field is stored inline in each item.
  std::vector<std::string> frame_fields;

  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

// A batch of N items: one FieldView per signature field, each [N, ...].
struct InsertBatch {
  std::vector<FieldView> fields;
  // N priorities, or empty: every item gets the largest priority seen so far
  // (PER, Algorithm 1: "store transition with maximal priority"; 1 at first).
  std::span<const double> priorities;
  // The policy (weights) version that produced the items.
  std::int64_t policy_version = 0;
};

// The largest batch one sample call may ask for.
inline constexpr std::int64_t kMaxSampleBatch = std::int64_t{1} << 20;

struct SampleRequest {
  std::int64_t batch_size = 1;  // in [1, kMaxSampleBatch]
  // The sampler's current policy version, for the staleness statistics;
  // default: the newest version inserted so far.
  std::optional<std::int64_t> policy_version = std::nullopt;
  // Draw with a generator seeded by this, instead of the table's own stream:
  // the draw then depends only on the table's contents and the seed, so a
  // learner that seeds each update's draw from its update count samples the
  // same batches after a resume as an uninterrupted run would (a prefetched
  // batch that was thrown away does not shift the stream). Default: the
  // table's stream.
  std::optional<std::uint64_t> seed = std::nullopt;
};

// One field of a sampled batch: shape [B, field shape...], rows in draw
// order. `data` is shared so a server can send it without copying.
struct SampledField {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::shared_ptr<std::byte[]> data;
  std::size_t num_bytes = 0;
  std::span<const std::byte> bytes() const { return {data.get(), num_bytes}; }
};

// The result of one sample call, B draws with replacement. Everything is
// indexed by draw. B equals the requested batch size except when
// max_times_sampled removes the table's last items during the batch: then
// the batch stops short (never empty).
struct SampledBatch {
  std::vector<std::uint64_t> keys;
  std::vector<double> priorities;           // the item's priority when drawn
  std::vector<double> probabilities;        // P(i) of the draw
  std::vector<std::int64_t> table_sizes;    // N when drawn (for the IS weights)
  std::vector<double> weights;              // IS weights, see ComputeImportanceWeights
  std::vector<std::int64_t> times_sampled;  // including this draw
  std::vector<std::int64_t> policy_versions;
  std::vector<std::int64_t> insert_times_ns;
  std::vector<SampledField> fields;  // signature order
  double beta = 0;                   // the IS exponent the weights were computed with
  std::int64_t size() const { return static_cast<std::int64_t>(keys.size()); }
};

using InsertCallback = std::function<void(Result<std::vector<std::uint64_t>>)>;
using SampleCallback = std::function<void(Result<SampledBatch>)>;

// The few numbers a sharded client needs often: cheap (no percentiles).
struct TableTotals {
  std::int64_t inserted = 0;  // the rate limiter's counts (what a global ratio adds up)
  std::int64_t sampled = 0;
  std::int64_t size = 0;
  double total_weight = 0;        // Selector::TotalWeight()
  std::size_t storage_bytes = 0;  // TableInfo::storage_bytes
};

struct PriorityUpdateResult {
  std::int64_t updated = 0;
  std::int64_t ignored = 0;  // keys of items no longer in the table
};

// A change to a live table; unset fields stay as they are.
struct TableReconfig {
  std::optional<RateLimiterOptions> rate_limiter = std::nullopt;
  std::optional<std::int64_t> max_times_sampled = std::nullopt;
  std::optional<double> alpha = std::nullopt;
  std::optional<double> beta = std::nullopt;
};

struct TableCounters {
  std::int64_t inserted = 0;  // items
  std::int64_t sampled = 0;   // draws
  std::int64_t evicted = 0;   // FIFO, when full
  std::int64_t removed_max_times_sampled = 0;
  std::int64_t priorities_updated = 0;
  std::int64_t priority_updates_ignored = 0;  // keys no longer in the table
  std::int64_t inserts_waited = 0;            // calls the rate limiter held
  std::int64_t samples_waited = 0;
  std::int64_t waiters_expired = 0;
};

// Everything a checkpoint saves besides the columns.
struct TableState {
  TableOptions options;  // as reconfigured
  RateLimiterCounts limiter;
  TableCounters counters;
  std::uint64_t next_seq = 1;
  double max_priority = 1.0;
  std::int64_t max_policy_version = 0;
  std::int64_t size = 0;
};

struct RateLimiterInfo {
  RateLimiterOptions options;
  RateLimiterCounts counts;
  double cursor = 0;  // inserts * samples_per_insert - samples
  bool can_insert = false;
  bool can_sample = false;
  std::int64_t pending_inserts = 0;  // waiting calls
  std::int64_t pending_samples = 0;
};

struct StalenessInfo {
  std::int64_t recorded = 0;  // draws ever; percentiles cover the last window
  Percentiles age_seconds;    // sample time - insert time
  Percentiles version_lag;    // sampler's policy version - item's
};

struct FramePoolInfo {
  std::int64_t live = 0;         // distinct frames stored
  std::int64_t acquired = 0;     // frames handed in by inserts
  std::int64_t stored = 0;       // of those, stored as new frames
  std::size_t frame_bytes = 0;   // one frame
  std::size_t memory_bytes = 0;  // the pool's, see FramePool::memory_bytes
};

struct TableInfo {
  std::string name;
  std::int64_t size = 0;
  std::int64_t capacity = 0;
  SelectorOptions selector;
  std::int64_t max_times_sampled = 0;
  TableCounters counters;
  double insert_rate = 0;  // items per second, recent
  double sample_rate = 0;  // draws per second, recent
  RateLimiterInfo rate_limiter;
  PriorityHistogram priorities;
  double max_priority = 1;  // largest ever set: what an insert without priorities gets
  StalenessInfo staleness;
  std::uint64_t next_key_seq = 1;
  double total_weight = 0;         // Selector::TotalWeight()
  std::int64_t chunks_copied = 0;  // by copy-on-write during checkpoints
  // Memory of the stored items: their columns (metadata and fields as
  // stored) and the frame pool with its index; divided by size, the bytes
  // one stored item costs.
  std::size_t storage_bytes = 0;
  FramePoolInfo frames;  // all zero without frame fields
  bool closed = false;
};

}  // namespace rlswarm::replay
