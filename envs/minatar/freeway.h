#pragma once

// MinAtar Freeway: the rules of the reference's minatar/environments/freeway.py
// (github.com/kenjyoung/MinAtar, commit 6fbf090).
//
// The chicken stays in column 4 and starts on the bottom row (y = 9). It can
// move up or down one row, but only when its move timer is 0; a move sets the
// timer to 3, and the timer counts down once per step (so it moves at most
// every third step, and not on the first three steps of an episode). Reaching
// row 0 gives +1, sends the chicken back to row 9 and redraws every car's
// speed and direction (not its position). Eight cars, one on each of rows
// 1-8, start at x = 0; a car with speed v (|v| in 1..5, its sign the
// direction) moves one cell when its timer is 0, which then restarts at |v|,
// so it moves every |v| + 1 steps; cars wrap around at the edges. A car in the
// chicken's cell, before or after it moves, sends the chicken back to row 9.
// The episode ends after 2501 steps: the reference's terminate_timer starts at
// 2500 and ends the episode when it drops below 0. No difficulty ramping.
//
// One step, in the reference's order: move the chicken; score a crossing
// (and redraw the cars); then for each car in turn: collide, move, collide;
// then count down the timers.
//
// Observation channels: 0 chicken, 1 car, 2-6 the trail behind each car (the
// cell it came from, wrapping around) in the channel of its speed 1-5.
// Not thread-safe.

#include <array>
#include <cstdint>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

class Freeway {
 public:
  static constexpr const char* kName = "Freeway";
  static constexpr int kChannels = 7;
  static constexpr std::array<int, 3> kMinimalActions = {kNoop, kUp, kDown};

  enum Channel : int { kChickenChannel = 0, kCarChannel = 1, kSpeed1Channel = 2 };
  static constexpr int kNumCars = 8;
  static constexpr int kChickenX = 4;
  static constexpr int kPlayerSpeed = 3;  // steps between chicken moves
  static constexpr int kTimeLimit = 2500;

  struct Car {
    int x = 0;
    int y = 0;
    int timer = 0;  // the car moves on a step that finds it at 0
    int speed = 1;  // |speed| in 1..5; > 0 moves right, < 0 left
  };

  // Everything that evolves in an episode; public so tests can build
  // positions by hand.
  struct State {
    int chicken_y = kGridSize - 1;
    int move_timer = kPlayerSpeed;
    int terminate_timer = kTimeLimit;
    bool terminal = false;
    std::array<Car, kNumCars> cars{};
  };

  // Freeway has no difficulty ramp; the argument is accepted for the Game
  // interface, as the reference accepts and ignores `ramping`.
  explicit Freeway(bool difficulty_ramping);

  void Reset(Rng& rng);
  Outcome Act(int action, Rng& rng);
  void WriteState(std::uint8_t* grid) const;

  const State& state() const { return state_; }
  State& mutable_state() { return state_; }

 private:
  // Draws new speeds and directions for all cars; with `place`, also puts
  // them at their start cells (the reference's _randomize_cars).
  void RandomizeCars(Rng& rng, bool place);

  State state_;
};

}  // namespace rlswarm::envs::minatar
