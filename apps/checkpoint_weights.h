#pragma once

// A learner checkpoint's online network as a weights blob
// (models/weights_wire.h), for the unsharded inference that evaluation runs.

#include <string>
#include <vector>

#include "rpc/payload.h"

namespace rlswarm::apps {

// `path`: a checkpoint directory, or a root holding several (the newest
// valid one is read). Throws NotFound / DataLoss (learner/checkpoint_reader.h).
std::vector<rpc::Payload> CheckpointWeights(const std::string& path);

}  // namespace rlswarm::apps
