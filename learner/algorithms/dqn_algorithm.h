#pragma once

// Ape-X DQN behind the learner seam (learner_algorithm.h): the sharded
// online Q-network and its target, double-Q n-step targets with the Huber
// loss (dqn_loss.h), priorities |TD| + epsilon, and the target network
// updated by Polyak averaging after every update or copied every
// target_update_interval updates.

#include <memory>

#include "learner/algorithms/dqn_loss.h"
#include "learner/apex/learner_algorithm.h"
#include "learner/dist/shard_mesh.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

// What DQN adds to the loop's options (learner/apex/apex_options.h).
struct DqnOptions {
  DqnLossOptions loss;
  // The target network: Polyak averaging with this tau after every update
  // when > 0; otherwise a hard copy every target_update_interval updates
  // (docs/baselines.md: tau 0.01 or a copy every ~100 updates).
  double target_tau = 0.01;
  int64_t target_update_interval = 100;

  // Throws InvalidArgument: tau outside [0, 1], tau == 0 with
  // target_update_interval < 1, bad loss options.
  void Validate() const;
};

class DqnAlgorithm : public LearnerAlgorithm {
 public:
  // `model`: the Q-network's sharding, optimizer, init seed and device.
  DqnAlgorithm(models::ModelSpec spec, const ShardedModelOptions& model, DqnOptions options,
               ShardMesh mesh);

  std::string name() const override { return "dqn"; }
  AlgorithmStep Train(const StagedBatch& batch, int64_t update) override;
  void AfterUpdate(int64_t update) override;
  ShardedModel& main_model() override { return *online_; }
  std::vector<CheckpointedModel> checkpointed() override;
  std::vector<PublishedModel> published() override;

  ShardedModel& online() { return *online_; }
  ShardedModel& target() { return *target_; }

 private:
  DqnOptions options_;
  std::unique_ptr<ShardedModel> online_;
  std::unique_ptr<ShardedModel> target_;
};

}  // namespace rlswarm::learner
