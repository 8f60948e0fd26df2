#include "actors/q_batch_policy.h"

#include <algorithm>

#include "common/errors.h"

namespace rlswarm::actors {

QBatchPolicy::QBatchPolicy(QPolicy& policy, std::int64_t num_envs, double epsilon,
                           std::uint64_t seed)
    : policy_(policy),
      epsilon_(epsilon),
      seed_(seed),
      rngs_(static_cast<std::size_t>(num_envs)),
      episode_ids_(static_cast<std::size_t>(num_envs), 0),
      steps_(static_cast<std::size_t>(num_envs), 0),
      q_(static_cast<std::size_t>(num_envs * policy.num_actions())) {
  if (!(epsilon >= 0 && epsilon <= 1)) {
    throw InvalidArgument("epsilon must be in [0, 1], got " + std::to_string(epsilon));
  }
}

void QBatchPolicy::OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) {
  rngs_[slot].Seed(DeriveSeed(seed_ ^ 0xe7a1ULL, episode_id));
  episode_ids_[slot] = episode_id;
  steps_[slot] = 0;
}

void QBatchPolicy::Act(const envs::VectorEnv& env, std::span<std::int64_t> discrete,
                       std::span<float>) {
  const std::int64_t m = env.num_envs();
  const std::int64_t a = policy_.num_actions();
  policy_.Evaluate({env.observations(), static_cast<std::size_t>(m) * env.observation_bytes()}, m,
                   q_);
  for (std::int64_t i = 0; i < m; ++i) {
    if (on_observation) on_observation(i, episode_ids_[i], steps_[i]);
    ++steps_[i];
    const float* row = q_.data() + i * a;
    // The random draw happens whatever epsilon is, so greedy and
    // epsilon-greedy runs consume the same stream.
    const double u = rngs_[i].Uniform01();
    const auto random_action =
        static_cast<std::int64_t>(rngs_[i].Below(static_cast<std::uint64_t>(a)));
    discrete[i] = u < epsilon_ ? random_action : std::max_element(row, row + a) - row;
  }
}

}  // namespace rlswarm::actors
