#include "actors/q_acting_policy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "actors/q_batch_policy.h"
#include "common/errors.h"

namespace rlswarm::actors {

QActingPolicy::QActingPolicy(const models::ModelSpec& spec, std::uint64_t seed,
                             const envs::EnvSpec& env)
    : network_(spec, seed, env.observation.dtype) {
  if (env.action.kind != envs::ActionKind::kDiscrete) {
    throw InvalidArgument("actor: " + env.name +
                          " has continuous actions (DQN needs discrete; learner.algorithm: td3)");
  }
  if (network_.observation_bytes() != env.observation.NumBytes() ||
      network_.num_actions() != env.action.num_actions) {
    throw InvalidArgument("actor: the model does not fit " + env.name);
  }
}

void QActingPolicy::Act(std::span<const std::byte> observations, std::int64_t rows, double epsilon,
                        Rng& rng, std::span<std::byte> actions, std::span<float> q_taken,
                        std::span<float> values) {
  const std::int64_t a = network_.num_actions();
  q_.resize(static_cast<std::size_t>(rows * a));
  network_.Evaluate(observations, rows, q_);
  auto* chosen = reinterpret_cast<std::int64_t*>(actions.data());
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = q_.data() + i * a;
    const auto greedy = std::max_element(row, row + a) - row;
    values[i] = row[greedy];
    chosen[i] = rng.Uniform01() < epsilon
                    ? static_cast<std::int64_t>(rng.Below(static_cast<std::uint64_t>(a)))
                    : greedy;
    q_taken[i] = row[chosen[i]];
  }
}

void QActingPolicy::Values(std::span<const std::byte> observations, std::int64_t rows,
                           std::span<float> values) {
  const std::int64_t a = network_.num_actions();
  q_.resize(static_cast<std::size_t>(rows * a));
  network_.Evaluate(observations, rows, q_);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = q_.data() + i * a;
    values[i] = *std::max_element(row, row + a);
  }
}

std::unique_ptr<envs::BatchPolicy> QActingPolicy::MakeEvaluationPolicy(
    std::int64_t num_envs, double epsilon, std::uint64_t seed,
    std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation) {
  auto policy = std::make_unique<QBatchPolicy>(network_, num_envs, epsilon, seed);
  policy->on_observation = std::move(on_observation);
  return policy;
}

}  // namespace rlswarm::actors
