#pragma once

// Learner checkpoints <-> weights blobs (models/weights_wire.h): a
// checkpoint's online network for the unsharded inference that evaluation
// runs, and a blob (e.g. the weights an evaluation judged) written as a
// one-rank learner checkpoint that `rlswarm evaluate --checkpoint` loads.

#include <cstdint>
#include <string>
#include <vector>

#include "common/payload.h"
#include "models/model_spec.h"

namespace rlswarm::evaluate {

// `path`: a checkpoint directory, or a root holding several (the newest
// valid one is read); a TD3 learner's root (with actor/ and critic/): its
// policy. Throws NotFound / DataLoss (learner/checkpoint/checkpoint_reader.h).
std::vector<Payload> CheckpointWeights(const std::string& path);

// Writes `weights` (full, unsharded) of a `spec` network (of a blob with
// "policy." names, TD3's, the policy's tensors without the prefix) as the
// checkpoint
// <root>/update-<version>, atomically, keeping only it under `root`. Returns
// its directory. Throws InvalidArgument (weights of another model),
// ResourceExhausted / Unavailable (disk).
std::string SaveWeightsCheckpoint(const std::string& root, const models::ModelSpec& spec,
                                  const std::vector<Payload>& weights, std::uint64_t version);

}  // namespace rlswarm::evaluate
