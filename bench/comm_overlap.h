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
// they meet the same contention, and one update at a time, so that a caller
// can interleave them with the updates it measures.

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "learner/dist/communicator.h"
#include "learner/fsdp/sharded_model.h"
#include "models/model_spec.h"

namespace rlswarm::bench {

struct ComputeAlone {
  double forward_backward_seconds = 0;  // median per update
  double step_seconds = 0;              // median per update, the whole model
  double step_share = 1;                // the share of step_seconds one rank spends
  double Seconds() const { return forward_backward_seconds + step_share * step_seconds; }
};

// Times the compute alone one update at a time, so that a caller can
// interleave it with the updates it measures (the same minutes of a shared
// machine). `options`: the measured model's (its device, dtypes, strategy);
// the direct model is built from them without a group and warmed up by one
// update here. `step_share` as above. Not thread-safe.
class ComputeAloneTimer {
 public:
  ComputeAloneTimer(const models::ModelSpec& spec, const learner::ShardedModelOptions& options,
                    at::Tensor x, at::Tensor y, double step_share);
  // One update, timed (blocks for it).
  void TimeOne();
  // Medians over the TimeOne() calls so far (zeros before the first).
  ComputeAlone Result() const;

 private:
  void Update(double* forward_backward, double* step);
  learner::ShardedModel local_;
  at::Tensor x_, y_;
  double step_share_;
  std::vector<double> forward_backward_, step_;
};

struct CommAlone {
  double seconds = 0;             // median per update
  double collectives = 0;         // per update, as CommStats counts them
  double bytes_sent = 0;          // per update
  double span_union_seconds = 0;  // per update (0 on stream-ordered backends)
};

// Times the collectives of one update of `net` (its layouts and sharding
// options) on `comm`, one update's worth at a time, after one warm-up here.
// `comm` should be a Communicator of its own on the same group, so that
// `net`'s CommStats count only its updates. Collective calls block or throw
// as Communicator's do; every rank must call it at the same points. Holds
// one update's buffers. Not thread-safe.
class CommAloneTimer {
 public:
  CommAloneTimer(const learner::ShardedModel& net, std::shared_ptr<learner::Communicator> comm);
  void TimeOne();
  CommAlone Result() const;

 private:
  struct UnitBuffers {
    at::Tensor shard;  // param dtype, what the all-gather sends
    at::Tensor full;   // param dtype, what it fills
    at::Tensor grad;   // reduce dtype, the reduce-scatter's input
  };
  void OneUpdate();
  const learner::ShardedModel& net_;
  std::shared_ptr<learner::Communicator> comm_;
  std::vector<UnitBuffers> units_;
  at::Tensor flat_grad_, norms_;
  learner::CommStats start_;
  std::vector<double> seconds_;
};

// {"exposed_comm_seconds_per_update", "hidden_fraction"} from the three
// times; hidden_fraction null where comm_alone is 0.
nlohmann::json HiddenShare(double update_seconds, double compute_alone_seconds,
                           double comm_alone_seconds);

// The definitions above in words, for the JSON output.
nlohmann::json OverlapDefinitions();

}  // namespace rlswarm::bench
