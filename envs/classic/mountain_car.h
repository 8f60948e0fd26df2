#pragma once

// MountainCar-v0: drive an underpowered car out of a valley by rocking it
// (Moore 1990), with the constants, dynamics, clipping, left-wall collision,
// initial-state distribution, reward and termination of Gymnasium's
// `gymnasium/envs/classic_control/mountain_car.py` (0.29 and 1.0 agree, with
// the default goal_velocity = 0). See envs/classic/README.md for the table
// and the deviations.

#include <cstddef>
#include <cstdint>

#include "envs/env.h"

namespace rlswarm::envs {

// Not thread-safe (see Env).
class MountainCar final : public Env {
 public:
  static constexpr std::int64_t kDefaultMaxEpisodeSteps = 200;

  // The physical state in float64, as Gymnasium computes it; observations are
  // this state rounded to float32.
  struct State {
    double position = 0.0;  // in [-1.2, 0.6]
    double velocity = 0.0;  // in [-0.07, 0.07]
  };

  MountainCar();
  // max_episode_steps = 0 removes the time limit.
  explicit MountainCar(std::int64_t max_episode_steps);

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
