#pragma once

// Pendulum-v1: swing a torque-limited pendulum up and keep it upright, with
// the constants (g = 10), dynamics, clipping, cost, initial-state
// distribution and the never-terminating episodes of Gymnasium's
// `gymnasium/envs/classic_control/pendulum.py` (0.29 and 1.0 agree). See
// envs/classic/README.md for the table and the deviations.

#include <cstddef>
#include <cstdint>
#include <span>

#include "envs/env.h"

namespace rlswarm::envs {

// Not thread-safe (see Env).
class Pendulum final : public Env {
 public:
  static constexpr std::int64_t kDefaultMaxEpisodeSteps = 200;

  // The physical state in float64, as Gymnasium computes it. The observation
  // is [cos theta, sin theta, theta_dot] in float32.
  struct State {
    double theta = 0.0;      // from upright [rad], not normalised
    double theta_dot = 0.0;  // [rad/s], in [-8, 8]
  };

  Pendulum();
  // max_episode_steps = 0 removes the time limit.
  explicit Pendulum(std::int64_t max_episode_steps);

  const State& state() const { return state_; }
  // Places the env in `state` (for tests); the episode clock is unchanged,
  // so call it after a Reset.
  void SetState(const State& state) { state_ = state; }

 private:
  using Env::Advance;  // keeps the discrete overload visible (it throws)
  void ResetState() override;
  Transition Advance(std::span<const float> action) override;
  void WriteObservation(std::byte* out) const override;

  State state_;
};

}  // namespace rlswarm::envs
