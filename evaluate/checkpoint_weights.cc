#include "evaluate/checkpoint_weights.h"

#include "common/errors.h"
#include "learner/checkpoint.h"
#include "learner/checkpoint_reader.h"
#include "learner/communicator.h"
#include "learner/sharded_model.h"
#include "models/weights_wire.h"

namespace rlswarm::evaluate {

std::vector<Payload> CheckpointWeights(const std::string& path) {
  return models::EncodeWeights(learner::LoadCheckpointParameters(path));
}

std::string SaveWeightsCheckpoint(const std::string& root, const models::ModelSpec& spec,
                                  const std::vector<Payload>& weights, std::uint64_t version) {
  const models::WeightsPart part = models::DecodeWeights(weights);
  if (part.num_shards != 1) {
    throw InvalidArgument("SaveWeightsCheckpoint: weights are part " + std::to_string(part.shard) +
                          " of " + std::to_string(part.num_shards) + ", not the full model");
  }
  // A one-rank model holds everything; the checkpoint format (and its
  // atomic write) is the learner's own.
  learner::ShardedModel model(spec, learner::ShardedModelOptions{},
                              std::make_shared<learner::Communicator>());
  model.LoadFullParameters(part.tensors);
  return learner::SaveCheckpoint(root, model, /*target=*/nullptr,
                                 learner::CheckpointProgress{static_cast<int64_t>(version), 0},
                                 /*keep=*/1);
}

}  // namespace rlswarm::evaluate
