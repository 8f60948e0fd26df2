#pragma once

// TD3's acting (acting_policy.h), as Ape-X DPG's actors act: the
// deterministic policy plus Gaussian noise, a = clip(mu(s) + sigma * half *
// N(0, 1), low, high), with sigma in units of the action's half-range
// ((high - low) / 2) so one schedule fits any bounds; Q(s, a) = Q1(s, a)
// and V(s) = Q1(s, mu(s)) from the actor's copy of the critics, for the
// initial priorities |R + discount V(s') - Q1(s, a)| (the critic loss's
// priority, learner/algorithms/td3_loss.h, with the online policy in place of the
// smoothed target one).

#include "actors/acting_policy.h"
#include "actors/continuous_policy.h"

namespace rlswarm::actors {

class Td3ActingPolicy final : public ActingPolicy {
 public:
  // `critic` may be null for evaluation only (Act and Values then throw
  // FailedPrecondition). Throws InvalidArgument unless `env` has
  // continuous actions of the policy's width.
  Td3ActingPolicy(const models::ModelSpec& policy, const models::ModelSpec* critic,
                  std::uint64_t seed, const envs::EnvSpec& env);

  DType action_dtype() const override { return DType::kFloat32; }
  std::vector<std::int64_t> action_shape() const override { return action_shape_; }
  void Act(std::span<const std::byte> observations, std::int64_t rows, double sigma, Rng& rng,
           std::span<std::byte> actions, std::span<float> q_taken,
           std::span<float> values) override;
  void Values(std::span<const std::byte> observations, std::int64_t rows,
              std::span<float> values) override;
  void LoadWeights(const std::vector<Payload>& blob) override { network_.LoadWeights(blob); }
  std::unique_ptr<envs::BatchPolicy> MakeEvaluationPolicy(
      std::int64_t num_envs, double sigma, std::uint64_t seed,
      std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation) override;

  // mu(s) + sigma-scaled noise from `rng`, clipped, for one row of `mu`.
  void Explore(std::span<float> row, double sigma, Rng& rng) const;
  ContinuousPolicy& network() { return network_; }

 private:
  ContinuousPolicy network_;
  std::vector<std::int64_t> action_shape_;
  std::vector<float> low_, high_;
  std::vector<float> mu_, both_actions_, both_q_;
  std::vector<std::byte> both_obs_;
};

}  // namespace rlswarm::actors
