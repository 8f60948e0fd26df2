#pragma once

// TD3 behind the learner seam (learner_algorithm.h): Td3Trainer's four
// sharded networks trained on replay's n-step transitions (float actions of
// the env's action shape). The critics are the main model (trained every
// update); the policy and both targets move every policy_delay updates,
// inside Train. Checkpoints hold <dir>/actor (the policy and its target)
// and <dir>/critic (the twin critics and theirs); actors receive the policy
// ("policy." names) and the critics ("critic.": their initial priorities).

#include <memory>

#include "learner/algorithms/td3_trainer.h"
#include "learner/apex/learner_algorithm.h"
#include "models/continuous_networks.h"

namespace rlswarm::learner {

class Td3Algorithm : public LearnerAlgorithm {
 public:
  Td3Algorithm(models::ModelSpec actor_spec, models::ModelSpec critic_spec, ActionBounds bounds,
               Td3Options options, ShardMesh mesh);

  std::string name() const override { return "td3"; }
  AlgorithmStep Train(const StagedBatch& batch, int64_t update) override;
  void AfterUpdate(int64_t) override {}  // the targets move inside Train
  ShardedModel& main_model() override { return trainer_.critic(); }
  std::vector<CheckpointedModel> checkpointed() override;
  std::vector<PublishedModel> published() override;

  Td3Trainer& trainer() { return trainer_; }

 private:
  Td3Trainer trainer_;
};

}  // namespace rlswarm::learner
