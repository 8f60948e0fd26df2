#pragma once

// Acrobot-v1: swing the tip of a two-link pendulum, actuated at the middle
// joint, above a target height (Sutton 1996; Sutton & Barto's book), with the
// constants, "book" dynamics, RK4 integration, wrapping and clipping,
// initial-state distribution, reward and termination of Gymnasium's
// `gymnasium/envs/classic_control/acrobot.py` (0.29 and 1.0 agree). See
// envs/classic/README.md for the table and the deviations.

#include <cstddef>
#include <cstdint>

#include "envs/env.h"

namespace rlswarm::envs {

// Not thread-safe (see Env).
class Acrobot final : public Env {
 public:
  static constexpr std::int64_t kDefaultMaxEpisodeSteps = 500;

  // The physical state in float64, as Gymnasium computes it. The observation
  // is [cos theta1, sin theta1, cos theta2, sin theta2, dtheta1, dtheta2] in
  // float32.
  struct State {
    double theta1 = 0.0;   // first link from straight down [rad], in [-pi, pi]
    double theta2 = 0.0;   // second link relative to the first [rad], in [-pi, pi]
    double dtheta1 = 0.0;  // [rad/s], in [-4 pi, 4 pi]
    double dtheta2 = 0.0;  // [rad/s], in [-9 pi, 9 pi]
  };

  Acrobot();
  // max_episode_steps = 0 removes the time limit.
  explicit Acrobot(std::int64_t max_episode_steps);

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
