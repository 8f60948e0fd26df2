#pragma once

// QBatchPolicy: a Q-network as an envs::BatchPolicy for evaluation: greedy,
// or epsilon-greedy with each episode's random stream seeded from (seed,
// episode id), so results depend only on the seed, never on the number of
// envs (the contract of envs::RunEpisodes).
//
// Not thread-safe.

#include <cstdint>
#include <functional>
#include <vector>

#include "actors/q_policy.h"
#include "envs/episode_runner.h"

namespace rlswarm::actors {

class QBatchPolicy final : public envs::BatchPolicy {
 public:
  // `policy` must outlive this. epsilon in [0, 1] (InvalidArgument).
  QBatchPolicy(QPolicy& policy, std::int64_t num_envs, double epsilon, std::uint64_t seed);
  void OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) override;
  void Act(const envs::VectorEnv& env, std::span<std::int64_t> discrete,
           std::span<float> continuous) override;
  // Called with (slot, episode id, step in episode) before each Act of a
  // slot, e.g. to record frames.
  std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation;

 private:
  QPolicy& policy_;
  double epsilon_;
  std::uint64_t seed_;
  std::vector<Rng> rngs_;
  std::vector<std::uint64_t> episode_ids_;
  std::vector<std::int64_t> steps_;
  std::vector<float> q_;
};

}  // namespace rlswarm::actors
