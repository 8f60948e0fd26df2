#pragma once

// Runs whole episodes of a batch policy on a VectorEnv and summarises their
// returns. The runner is policy-agnostic: the random policy lives here, the
// learned Q-network policies of the actors implement the same interface.
//
// Reproducibility: the VectorEnv must use AutoResetSeeding::kSeedPerEpisode,
// and the result is exactly episodes 0..N-1 of that numbering, whatever the
// number of envs, so `--num-envs` changes speed, never results.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/random.h"
#include "envs/vector_env.h"

namespace rlswarm::envs {

// Chooses one action per env of a batch. Not thread-safe.
class BatchPolicy {
 public:
  virtual ~BatchPolicy() = default;
  // Called when slot `slot` starts episode `episode_id` (before the first Act
  // that sees it), so a stochastic policy can reseed per episode.
  virtual void OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) = 0;
  // Writes the actions for env.observations(): `discrete` (num_envs values)
  // for discrete envs, `continuous` (num_envs x action size) otherwise.
  virtual void Act(const VectorEnv& env, std::span<std::int64_t> discrete,
                   std::span<float> continuous) = 0;
};

// Uniform over the action space; the stream of episode k is seeded with
// DeriveSeed(seed, k), so an episode's actions depend only on (seed, k).
class RandomPolicy final : public BatchPolicy {
 public:
  RandomPolicy(const EnvSpec& spec, std::int64_t num_envs, std::uint64_t seed);
  void OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) override;
  void Act(const VectorEnv& env, std::span<std::int64_t> discrete,
           std::span<float> continuous) override;

 private:
  EnvSpec spec_;
  std::uint64_t seed_;
  std::vector<Rng> rngs_;
};

struct EpisodeResult {
  std::uint64_t episode_id = 0;
  double episode_return = 0.0;
  std::int64_t length = 0;
};

// Called with each counted episode as it finishes; returning false stops
// the run early (e.g. once a target mean return is out of reach).
using EpisodeCallback = std::function<bool(const EpisodeResult&)>;

// Runs episodes 0..num_episodes-1 and returns them ordered by id. Throws
// InvalidArgument if env does not seed per episode or num_episodes < 1.
// When `keep_going` stops the run early, the result holds only the episodes
// finished by then (the order they finish in depends on the number of envs).
// `cancelled`, when given, is asked before every step: true ends the run
// with the episodes finished so far (an env without a time limit can run one
// episode forever).
std::vector<EpisodeResult> RunEpisodes(VectorEnv& env, BatchPolicy& policy,
                                       std::int64_t num_episodes, std::uint64_t seed,
                                       const EpisodeCallback& keep_going = {},
                                       const std::function<bool()>& cancelled = {});

struct ReturnSummary {
  std::int64_t episodes = 0;
  double mean_return = 0.0;
  double std_return = 0.0;  // population standard deviation (NumPy's default)
  double min_return = 0.0;
  double max_return = 0.0;
  double mean_length = 0.0;
};

ReturnSummary Summarize(const std::vector<EpisodeResult>& episodes);

}  // namespace rlswarm::envs
