#pragma once

// The networks of continuous-action algorithms (TD3, learner/td3_*), as
// ModelSpecs (model_spec.h), so that they are sharded, checkpointed,
// published and evaluated like the Q-networks:
//  - a deterministic policy mu(s): MLP, ReLU hidden layers, a linear output
//    squashed by tanh into the action bounds, a = mid + half * tanh(z)
//    (Fujimoto et al. 2018; the bounds are the env's action spec);
//  - twin critics Q1(s, a), Q2(s, a) in one model: every layer holds both
//    critics' weights stacked ([2, out, in]) and runs them as one batched
//    matmul, so the two stay independent networks (no shared parameter)
//    while costing one sharding unit per layer and one optimizer (as
//    Stable-Baselines3 and the TD3 authors' code step both with one Adam).
//    Input: [B, obs + act] (state and action concatenated); output [B, 2].

#include <cstdint>
#include <vector>

#include "models/model_spec.h"

namespace rlswarm::models {

// Name prefixes of the two networks in one weights blob: the TD3 learner
// publishes both (actors use the critics for their initial priorities),
// evaluation needs the policy alone.
inline constexpr char kPolicyWeightsPrefix[] = "policy.";
inline constexpr char kCriticWeightsPrefix[] = "critic.";

struct DeterministicPolicyOptions {
  int64_t observation_dim = 3;
  int64_t action_dim = 1;
  std::vector<int64_t> hidden_sizes = {256, 256};
  // Per action dimension (or one value for all); low < high.
  std::vector<float> action_low = {-1.0f};
  std::vector<float> action_high = {1.0f};

  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

struct TwinCriticOptions {
  int64_t observation_dim = 3;
  int64_t action_dim = 1;
  std::vector<int64_t> hidden_sizes = {256, 256};

  void Validate() const;
};

// Layers "fc0", "fc1", ... (linear + ReLU), then "action" (linear, tanh into
// the bounds). num_actions = action_dim (the output width).
ModelSpec MakeDeterministicPolicySpec(const DeterministicPolicyOptions& options);

// Layers "fc0", ... (twin linear + ReLU), then "q" (twin linear to 1).
// sample_shape {obs + act}; num_actions = 2 (the output columns Q1, Q2).
ModelSpec MakeTwinCriticSpec(const TwinCriticOptions& options);

// TD3's networks: the policy and its twin critics.
struct Td3Specs {
  ModelSpec policy;
  ModelSpec critic;
};

}  // namespace rlswarm::models
