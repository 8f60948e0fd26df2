#include "learner/algorithms/td3_algorithm.h"

#include <ATen/ATen.h>

#include "replay/service/transition.h"

namespace rlswarm::learner {

Td3Algorithm::Td3Algorithm(models::ModelSpec actor_spec, models::ModelSpec critic_spec,
                           ActionBounds bounds, Td3Options options, ShardMesh mesh)
    : trainer_(std::move(actor_spec), std::move(critic_spec), std::move(bounds), std::move(options),
               std::move(mesh)) {}

AlgorithmStep Td3Algorithm::Train(const StagedBatch& batch, int64_t update) {
  namespace field = replay::transition;
  const at::Tensor& obs = batch.Field(field::kObservation);
  const int64_t rows = obs.size(0);
  Td3Batch b;
  b.observation = obs.reshape({rows, -1});
  b.action = batch.Field(field::kAction).reshape({rows, -1});
  b.reward = batch.Field(field::kReward).reshape(-1);
  b.discount = batch.Field(field::kDiscount).reshape(-1);
  b.next_observation = batch.Field(field::kNextObservation).reshape({rows, -1});
  b.weights = batch.weights;
  std::vector<double> priorities = trainer_.TrainOn(b, update);
  return {std::move(priorities), trainer_.last_step().critic_loss,
          trainer_.last_step().mean_abs_td};
}

std::vector<CheckpointedModel> Td3Algorithm::checkpointed() {
  return {{"actor", &trainer_.actor(), &trainer_.actor_target()},
          {"critic", &trainer_.critic(), &trainer_.critic_target()}};
}

std::vector<PublishedModel> Td3Algorithm::published() {
  return {{models::kPolicyWeightsPrefix, &trainer_.actor()},
          {models::kCriticWeightsPrefix, &trainer_.critic()}};
}

}  // namespace rlswarm::learner
