#pragma once

// The seam between the Ape-X learner loop (apex_learner.h: replay, the
// ranks' agreement, priorities, weights broadcast, checkpoints, metrics) and
// what differs between the algorithms it trains (dqn_algorithm.h,
// td3_algorithm.h): their networks, the loss and its priorities, and the
// target networks. The networks are ShardedModels, so every algorithm is
// sharded, checkpointed and published the same way.
//
// Collective contract: Train and AfterUpdate are collectives (every rank
// calls them with the same update number, in the same order).

#include <cstdint>
#include <string>
#include <vector>

#include "learner/apex/device_copies.h"
#include "learner/apex/weights_broadcaster.h"
#include "learner/fsdp/sharded_model.h"

namespace rlswarm::learner {

// One network with its target (null when it has none), checkpointed under
// <checkpoint_dir>/<subdir> ("" = the checkpoint directory itself).
struct CheckpointedModel {
  std::string subdir;
  ShardedModel* online = nullptr;
  ShardedModel* target = nullptr;
};

struct AlgorithmStep {
  std::vector<double> priorities;  // one per row of this rank's batch
  double loss = 0;                 // the loss the replay priorities come from
  double mean_abs_td = 0;
};

class LearnerAlgorithm {
 public:
  virtual ~LearnerAlgorithm() = default;

  // "dqn", "td3".
  virtual std::string name() const = 0;
  // Trains on this rank's staged rows as update `update` (1-based); returns
  // their new priorities. Does not touch replay. Collective.
  virtual AlgorithmStep Train(const StagedBatch& batch, int64_t update) = 0;
  // Target-network work due after update `update` trained. Collective.
  virtual void AfterUpdate(int64_t update) = 0;
  // The network whose step health (gradient norm, skipped non-finite steps)
  // the learner's metrics report: the one trained every update.
  virtual ShardedModel& main_model() = 0;
  // Every network that a checkpoint holds, in a fixed order.
  virtual std::vector<CheckpointedModel> checkpointed() = 0;
  // What actors act with (DQN: the Q-network; TD3: the policy and the
  // critics, which actors use for the initial priorities).
  virtual std::vector<PublishedModel> published() = 0;
};

}  // namespace rlswarm::learner
