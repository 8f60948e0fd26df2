#pragma once

// CartPole-v1: balance a pole hinged on a cart that is pushed left or right
// (Barto, Sutton & Anderson 1983), with the constants, Euler integrator,
// initial-state distribution, reward and termination of Gymnasium's
// `gymnasium/envs/classic_control/cartpole.py` (0.29 and 1.0 agree). See
// envs/classic/README.md for the table and the deviations.

#include <cstddef>
#include <cstdint>

#include "envs/env.h"

namespace rlswarm::envs {

// Not thread-safe (see Env).
class CartPole final : public Env {
 public:
  static constexpr std::int64_t kDefaultMaxEpisodeSteps = 500;

  // The physical state in float64, as Gymnasium computes it; observations are
  // this state rounded to float32.
  struct State {
    double x = 0.0;          // cart position [m]
    double x_dot = 0.0;      // cart velocity [m/s]
    double theta = 0.0;      // pole angle from upright [rad]
    double theta_dot = 0.0;  // pole angular velocity [rad/s]
  };

  CartPole();
  // max_episode_steps = 0 removes the time limit.
  explicit CartPole(std::int64_t max_episode_steps);

  const State& state() const { return state_; }
  // Places the env in `state` (for tests); the episode clock is unchanged,
  // so call it after a Reset.
  void SetState(const State& state) { state_ = state; }

 private:
  using Env::Advance;  // keeps the continuous overload visible (it throws)
  void ResetState() override;
  Transition Advance(std::int64_t action) override;
  void WriteObservation(std::byte* out) const override;

  State state_;
};

}  // namespace rlswarm::envs
