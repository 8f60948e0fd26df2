#pragma once

// The learner of a config: the Ape-X loop (learner/apex/apex_learner.h) with
// the algorithm learner.algorithm names (dqn: the model section's Q-network;
// td3: its policy and twin critics for the env's action bounds), for
// `rlswarm learner` and the embedded launch alike.

#include <memory>

#include "config/experiment_config.h"
#include "learner/apex/apex_learner.h"

namespace rlswarm::config {

// Throws InvalidArgument (an algorithm that does not fit the env) and what
// ApeXLearner's constructor throws.
std::unique_ptr<learner::ApeXLearner> MakeLearner(const ExperimentConfig& config,
                                                  learner::ApeXOptions options,
                                                  learner::ShardMesh mesh,
                                                  c10::intrusive_ptr<c10d::Store> store = {});

}  // namespace rlswarm::config
