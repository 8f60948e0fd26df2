#pragma once

// Ape-X DQN behind the learner seam (learner_algorithm.h): the sharded
// online Q-network and its target, double-Q n-step targets with the Huber
// loss (dqn_loss.h), priorities |TD| + epsilon, and the target network
// updated by Polyak averaging after every update or copied every
// target_update_interval updates.

#include <memory>

#include "learner/dqn_loss.h"
#include "learner/learner_algorithm.h"
#include "learner/shard_mesh.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

struct DqnAlgorithmOptions {
  ShardedModelOptions model;  // sharding, optimizer, init seed, device
  DqnLossOptions loss;
  double target_tau = 0.01;  // > 0: Polyak after every update; 0: hard copies
  int64_t target_update_interval = 100;
};

class DqnAlgorithm : public LearnerAlgorithm {
 public:
  DqnAlgorithm(models::ModelSpec spec, DqnAlgorithmOptions options, ShardMesh mesh);

  std::string name() const override { return "dqn"; }
  AlgorithmStep Train(const StagedBatch& batch, int64_t update) override;
  void AfterUpdate(int64_t update) override;
  ShardedModel& main_model() override { return *online_; }
  std::vector<CheckpointedModel> checkpointed() override;
  std::vector<PublishedModel> published() override;

  ShardedModel& online() { return *online_; }
  ShardedModel& target() { return *target_; }

 private:
  DqnAlgorithmOptions options_;
  std::unique_ptr<ShardedModel> online_;
  std::unique_ptr<ShardedModel> target_;
};

}  // namespace rlswarm::learner
