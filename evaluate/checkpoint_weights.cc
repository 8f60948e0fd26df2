#include "evaluate/checkpoint_weights.h"

#include <filesystem>

#include "common/errors.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/checkpoint/checkpoint_reader.h"
#include "learner/dist/communicator.h"
#include "learner/fsdp/sharded_model.h"
#include "models/continuous_networks.h"
#include "models/weights_wire.h"

namespace rlswarm::evaluate {

std::vector<Payload> CheckpointWeights(const std::string& path) {
  // A TD3 learner's checkpoints hold the policy under <root>/actor.
  const std::filesystem::path actor = std::filesystem::path(path) / "actor";
  std::error_code ec;
  const bool td3 = std::filesystem::is_directory(actor, ec);
  return models::EncodeWeights(learner::LoadCheckpointParameters(td3 ? actor.string() : path));
}

std::string SaveWeightsCheckpoint(const std::string& root, const models::ModelSpec& spec,
                                  const std::vector<Payload>& weights, std::uint64_t version) {
  const models::WeightsPart part = models::DecodeWeights(weights);
  if (part.num_shards != 1) {
    throw InvalidArgument("SaveWeightsCheckpoint: weights are part " + std::to_string(part.shard) +
                          " of " + std::to_string(part.num_shards) + ", not the full model");
  }
  // Of a blob with the policy and the critics (TD3), the policy.
  models::NamedTensors tensors;
  const std::string prefix = models::kPolicyWeightsPrefix;
  for (const auto& [name, t] : part.tensors) {
    if (name.rfind(prefix, 0) == 0) tensors.emplace_back(name.substr(prefix.size()), t);
  }
  if (tensors.empty()) tensors = part.tensors;
  // A one-rank model holds everything; the checkpoint format (and its
  // atomic write) is the learner's own.
  learner::ShardedModel model(spec, learner::ShardedModelOptions{},
                              std::make_shared<learner::Communicator>());
  model.LoadFullParameters(tensors);
  return learner::SaveCheckpoint(root, model, /*target=*/nullptr,
                                 learner::CheckpointProgress{static_cast<int64_t>(version), 0},
                                 /*keep=*/1);
}

}  // namespace rlswarm::evaluate
