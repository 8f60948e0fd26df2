#pragma once

// Ape-X DQN's acting (acting_policy.h): epsilon-greedy on a Q-network
// (QPolicy); Q(s, a) of the chosen action and V(s) = max_a Q(s, a) for the
// initial priorities.

#include "actors/acting_policy.h"
#include "actors/q_policy.h"

namespace rlswarm::actors {

class QActingPolicy final : public ActingPolicy {
 public:
  // Throws InvalidArgument unless `env` has discrete actions that fit `spec`.
  QActingPolicy(const models::ModelSpec& spec, std::uint64_t seed, const envs::EnvSpec& env);

  DType action_dtype() const override { return DType::kInt64; }
  std::vector<std::int64_t> action_shape() const override { return {}; }
  void Act(std::span<const std::byte> observations, std::int64_t rows, double epsilon, Rng& rng,
           std::span<std::byte> actions, std::span<float> q_taken,
           std::span<float> values) override;
  void Values(std::span<const std::byte> observations, std::int64_t rows,
              std::span<float> values) override;
  void LoadWeights(const std::vector<Payload>& blob) override { network_.LoadWeights(blob); }
  std::unique_ptr<envs::BatchPolicy> MakeEvaluationPolicy(
      std::int64_t num_envs, double epsilon, std::uint64_t seed,
      std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation) override;

  QPolicy& network() { return network_; }

 private:
  QPolicy network_;
  std::vector<float> q_;
};

}  // namespace rlswarm::actors
