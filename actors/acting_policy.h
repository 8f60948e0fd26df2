#pragma once

// The actor side of the algorithm seam: what an actor's algorithm decides
// each step, behind one interface so that the actor loop (actor.h: envs,
// n-step transitions, the replay writer, weights refresh) is shared.
//   dqn (q_acting_policy.h): epsilon-greedy on a Q-network; Q(s, a) and
//        V(s) = max_a Q(s, a) for the Ape-X initial priorities.
//   td3 (td3_acting_policy.h): the deterministic policy with Gaussian noise
//        of scale sigma (in units of the action's half-range), clipped to
//        the bounds; Q1(s, a) and V(s) = Q1(s, mu(s)) from the actor's copy
//        of the critics, for the initial priorities.
// The exploration value an actor passes (epsilon or sigma) comes from its
// schedule (exploration.h), spread across actors as Ape-X spreads epsilons.
//
// Not thread-safe: one ActingPolicy per actor thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/dtype.h"
#include "common/payload.h"
#include "common/random.h"
#include "envs/episode_runner.h"
#include "envs/spec.h"
#include "models/model_spec.h"

namespace rlswarm::actors {

class ActingPolicy {
 public:
  virtual ~ActingPolicy() = default;

  // The replay "action" field of one row: int64 scalar (discrete) or the
  // env's float32 action array.
  virtual DType action_dtype() const = 0;
  virtual std::vector<std::int64_t> action_shape() const = 0;
  std::size_t action_bytes() const;

  // For `rows` observations (row-major): the actions to take with
  // exploration `exploration` (epsilon, or sigma), the Q-value of each
  // chosen action, and V of each observation.
  virtual void Act(std::span<const std::byte> observations, std::int64_t rows, double exploration,
                   Rng& rng, std::span<std::byte> actions, std::span<float> q_taken,
                   std::span<float> values) = 0;
  // V of `rows` observations (the bootstrap of truncated episodes).
  virtual void Values(std::span<const std::byte> observations, std::int64_t rows,
                      std::span<float> values) = 0;
  // Replaces the networks' parameters with a whole-model weights blob.
  // Throws InvalidArgument on a blob that does not fit (the old weights stay).
  virtual void LoadWeights(const std::vector<Payload>& blob) = 0;
  // An evaluation policy over these networks (greedy when `noise` is 0,
  // else epsilon / sigma), each episode's stream seeded from (seed, episode).
  // `on_observation(slot, episode, step)` (optional) runs before each
  // action of a slot, e.g. to record frames. Lives no longer than this.
  virtual std::unique_ptr<envs::BatchPolicy> MakeEvaluationPolicy(
      std::int64_t num_envs, double noise, std::uint64_t seed,
      std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation = {}) = 0;
};

// The networks of an algorithm as actors and evaluators build them.
struct ActingNetworks {
  models::ModelSpec policy;                 // dqn: the Q-network; td3: mu
  std::optional<models::ModelSpec> critic;  // td3: the twin critics
  std::uint64_t seed = 0;                   // initial parameters until weights arrive
};

// dqn for an env with discrete actions, td3 for continuous ones (without a
// critic: for evaluation only). Throws InvalidArgument when the networks do
// not fit the env.
std::unique_ptr<ActingPolicy> MakeActingPolicy(const ActingNetworks& networks,
                                               const envs::EnvSpec& env);

}  // namespace rlswarm::actors
