#include "apps/checkpoint_weights.h"

#include "learner/checkpoint_reader.h"
#include "models/weights_wire.h"

namespace rlswarm::apps {

std::vector<rpc::Payload> CheckpointWeights(const std::string& path) {
  return models::EncodeWeights(learner::LoadCheckpointParameters(path));
}

}  // namespace rlswarm::apps
