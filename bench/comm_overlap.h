#pragma once

// How much of an update's communication its compute hides, measured as FSDP
// users measure it: the update's time against the same rank's compute alone
// and the same collectives alone, all timed in the same run.
//
//   exposed = max(0, update - compute_alone)
//   hidden_fraction = 1 - exposed / comm_alone   (clamped to [0, 1])
//
// compute_alone: the rank's update with no collective at all, a direct-path
// ShardedModel (no group) on the rank's local batch: forward and backward
// timed on their own, plus its optimizer step scaled to the share of the
// parameters the rank steps (1 / shards for sharded strategies, 1 for
// no_shard; Adam, the norms and the clipping are elementwise over the flat
// buffers, so their time scales with it). What the sharded path adds on the
// host besides the collectives (copies into gathered units, the all-to-all
// fallback's local sum) therefore counts as exposed communication.
// comm_alone: the collectives of one update of the measured model, with the
// same sizes, dtypes, order, prefetch windows and at most 2 reduce-scatters
// in flight, issued back to back with no compute between them.
//
// Both run on every rank at once, as the update does, so on a shared CPU
// they meet the same contention. Not thread-safe; ranks call them in the
// same order (comm_alone issues collectives).

#include <nlohmann/json.hpp>

#include "learner/communicator.h"
#include "learner/sharded_model.h"
#include "models/model_spec.h"

namespace rlswarm::bench {

struct ComputeAlone {
  double forward_backward_seconds = 0;  // median per update
  double step_seconds = 0;              // median per update, the whole model
  double step_share = 1;                // the share of step_seconds one rank spends
  double Seconds() const { return forward_backward_seconds + step_share * step_seconds; }
};

// `options`: the measured model's (its device, dtypes, strategy); the direct
// model is built from them without a group. `step_share` as above. Times
// `updates` updates after one warm-up. Blocks for their time.
ComputeAlone MeasureComputeAlone(const models::ModelSpec& spec,
                                 const learner::ShardedModelOptions& options, const at::Tensor& x,
                                 const at::Tensor& y, double step_share, int updates);

struct CommAlone {
  double seconds = 0;             // median per update
  double collectives = 0;         // per update, as CommStats counts them
  double bytes_sent = 0;          // per update
  double span_union_seconds = 0;  // per update (0 on stream-ordered backends)
};

// The collectives of one update of `net` (its layouts and sharding options)
// on `comm`, `updates` times after one warm-up. Collective calls block or
// throw as Communicator's do; every rank must call it at the same point.
CommAlone MeasureCommAlone(const learner::ShardedModel& net, learner::Communicator& comm,
                           int updates);

// {"exposed_comm_seconds_per_update", "hidden_fraction"} from the three
// times; hidden_fraction null where comm_alone is 0.
nlohmann::json HiddenShare(double update_seconds, double compute_alone_seconds,
                           double comm_alone_seconds);

// The definitions above in words, for the JSON output.
nlohmann::json OverlapDefinitions();

}  // namespace rlswarm::bench
