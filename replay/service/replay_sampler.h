#pragma once

// ReplaySampler: what a learner uses to draw batches from a sharded replay
// service and to send priorities back.
//
// One batch from many shards: the B draws are split over the shards by a
// multinomial draw with probabilities q_s proportional to each shard's
// sampling weight (sum of p^alpha for prioritized tables, the size for
// uniform ones), so that, with every shard's own prioritized draw, item i of
// shard s is drawn with probability q_s * P_s(i) = p_i^alpha / sum over all
// shards: the same distribution as one big table. The shard weights come
// back with every sample and priority-update reply and are refreshed (the
// `totals` call) when older than totals_max_age. The IS weights are
// recomputed over the whole batch from the actual draw probability q_s *
// P_s(i) and the total size N of all shards: w_i = (N q_s P_s(i))^-beta /
// max_j w_j (PER, section 3.4). Keys carry their shard (protocol.h), so
// UpdatePriorities sends each key to the shard that owns it.
//
// Failure handling: only shards that answered a `totals` probe take part.
// A shard that fails (Unavailable, or no answer to the probe within
// probe_timeout) is skipped for down_backoff, doubling on every failure in a
// row up to down_backoff_max, then probed again. Once some shards have
// answered a sample, one that has not answered within straggler_timeout (a
// killed or hung shard, or one whose rate limiter holds the request) is
// treated the same way and its share of the batch is drawn from the others.
// Sample throws Unavailable when no shard is up, DeadlineExceeded when the
// shards (e.g. their rate limiters) hold it past the timeout. Priority updates for a shard that is
// down are dropped and counted (stats().priority_updates_lost): a learner must not stop for a
// restarting shard.
//
// Thread safety: all public methods are thread safe; calls run concurrently.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/thread_annotations.h"
#include "replay/service/protocol.h"
#include "replay/table_types.h"
#include "rpc/client.h"

namespace rlswarm::replay {

struct ReplaySamplerOptions {
  std::vector<std::string> endpoints;        // shard i serves at endpoints[i]
  rpc::ClientOptions client;                 // endpoint ignored; security, heartbeats
  std::chrono::milliseconds timeout{10000};  // per Sample / UpdatePriorities call
  std::chrono::milliseconds totals_max_age{500};
  std::chrono::milliseconds probe_timeout{500};
  std::chrono::milliseconds straggler_timeout{500};
  std::chrono::milliseconds down_backoff{200};
  std::chrono::milliseconds down_backoff_max{5000};
  std::uint64_t seed = 1;  // for the split of a batch over shards
  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

struct ReplaySamplerStats {
  std::int64_t batches = 0;
  std::int64_t items = 0;
  std::int64_t shard_failures = 0;  // sub-requests that found a shard down
  std::int64_t priority_updates_lost = 0;
};

class ReplaySampler {
 public:
  // Connects lazily. Throws InvalidArgument.
  explicit ReplaySampler(ReplaySamplerOptions options);
  ~ReplaySampler();
  ReplaySampler(const ReplaySampler&) = delete;
  ReplaySampler& operator=(const ReplaySampler&) = delete;

  // Draws `batch_size` items over all shards (see above). The result's keys
  // are global, its weights normalised over the batch, its fields in the
  // tables' signature order, rows grouped by shard. With one shard the
  // fields are the received frames (no copy). Blocks until every shard
  // involved replied or the timeout; throws DeadlineExceeded, Unavailable
  // (no shard up), InvalidArgument (bad batch size). `draw_seed`: the split
  // and each shard's draw use streams derived from it instead of the
  // sampler's and the tables' own, so the batch depends only on the seed and
  // the shards' contents and totals (a learner passes one per update, so a
  // resumed run draws what the uninterrupted one would have; SampleRequest).
  SampledBatch Sample(std::int64_t batch_size,
                      std::optional<std::int64_t> policy_version = std::nullopt,
                      std::optional<std::uint64_t> draw_seed = std::nullopt);
  // Sends each priority to the shard that owns its key, all shards at once;
  // blocks until they replied. Keys of unknown shards and of shards that are
  // down count as ignored. InvalidArgument for a size mismatch or a bad
  // priority (nothing is sent).
  PriorityUpdateResult UpdatePriorities(std::span<const std::uint64_t> keys,
                                        std::span<const double> priorities);

  // --- Admin -----------------------------------------------------------------
  // The shards' totals, refreshed now.
  std::vector<TableTotals> Totals();
  // The `info` JSON of a shard.
  std::string Info(int shard);
  // Writes a checkpoint on a shard; returns its JSON description.
  std::string Checkpoint(int shard);
  // Changes a live table; returns the shard's info JSON after the change.
  std::string Reconfigure(int shard, const TableReconfig& change);

  int num_shards() const { return static_cast<int>(shards_.size()); }
  ReplaySamplerStats stats() const;

 private:
  struct ShardState {
    TableTotals totals;
    std::chrono::steady_clock::time_point totals_time{};
    std::chrono::steady_clock::time_point down_until{};
    int failures_in_a_row = 0;
    bool known = false;
  };
  // How one round of a Sample splits its items: q_s, and counts[s] items
  // from shard s.
  struct ShardSplit {
    std::vector<double> q;
    std::vector<std::int64_t> counts;
  };
  // A Sample's progress over its rounds.
  struct SampleDraw {
    std::int64_t remaining = 0;
    std::uint64_t round = 0;
    std::optional<std::int64_t> policy_version;
    std::optional<std::uint64_t> draw_seed;
    std::vector<protocol::ShardSample> parts;
    std::vector<double> part_q;
  };
  void RefreshStaleTotals(std::chrono::steady_clock::time_point deadline);
  // Throws Unavailable when no shard is up.
  ShardSplit SplitAmongShards(std::int64_t items, Rng* split_rng) RLSWARM_EXCLUDES(mu_);
  // Asks each shard of `split` for its share at once and adds the parts that
  // arrive to `draw`; a shard that is down, or answers straggler_timeout
  // after the first, is marked down and its share left for the next round.
  // Rethrows another failure.
  void CollectParts(const ShardSplit& split, std::chrono::steady_clock::time_point deadline,
                    SampleDraw& draw) RLSWARM_EXCLUDES(mu_);
  void MarkDownLocked(std::size_t shard) RLSWARM_REQUIRES(mu_);
  void MarkUpLocked(std::size_t shard, const TableTotals& totals) RLSWARM_REQUIRES(mu_);
  rpc::Reply CallShard(int shard, const char* method, std::vector<Payload> payloads,
                       bool idempotent);
  rpc::Client& shard(int i);

  const ReplaySamplerOptions options_;
  std::vector<std::unique_ptr<rpc::Client>> shards_;
  mutable Mutex mu_;
  std::vector<ShardState> state_ RLSWARM_GUARDED_BY(mu_);
  Rng rng_ RLSWARM_GUARDED_BY(mu_);
  ReplaySamplerStats stats_ RLSWARM_GUARDED_BY(mu_);
};

}  // namespace rlswarm::replay
