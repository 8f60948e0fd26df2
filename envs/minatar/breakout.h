#pragma once

// MinAtar Breakout: the rules of the reference's minatar/environments/breakout.py
// (github.com/kenjyoung/MinAtar, commit 6fbf090).
//
// The paddle sits on the bottom row (y = 9) and moves one cell left or right
// per step. Three rows of bricks fill rows 1-3. The ball moves one cell
// diagonally per step and is reflected by the side walls, the ceiling and
// bricks; a brick hit gives +1 and removes the brick, but only if the ball did
// not hit a brick on the previous step (the `strike` flag: on a second hit in
// a row the ball passes into the brick's cell). When the ball reaches the
// paddle row it bounces straight back if it was above the paddle, is sent back
// the way it came if it lands on the paddle, and otherwise the episode ends.
// Whenever the ball reaches the paddle row with no brick left, rows 1-3 are
// refilled. There is no difficulty ramping.
//
// One step, in the reference's order: move the paddle; move the ball
// (side walls, then ceiling, else brick, else paddle row).
//
// Observation channels: 0 paddle, 1 ball, 2 trail (the ball's previous cell),
// 3 brick. Not thread-safe.

#include <array>
#include <cstdint>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

class Breakout {
 public:
  static constexpr const char* kName = "Breakout";
  static constexpr int kChannels = 4;
  static constexpr std::array<int, 3> kMinimalActions = {kNoop, kLeft, kRight};

  enum Channel : int { kPaddleChannel = 0, kBallChannel = 1, kTrailChannel = 2, kBrickChannel = 3 };
  // The reference's ball_dir values.
  enum Direction : int { kUpLeft = 0, kUpRight = 1, kDownRight = 2, kDownLeft = 3 };

  // Everything that evolves in an episode; public so tests can build
  // positions by hand. Invariant while not terminal: ball_y <= 8.
  struct State {
    int ball_x = 0;
    int ball_y = 3;
    int ball_dir = kDownRight;
    int last_x = 0;  // the ball's previous cell (the trail)
    int last_y = 3;
    int paddle_x = 4;
    bool strike = false;  // the ball hit a brick on the previous step
    bool terminal = false;
    std::array<std::array<bool, kGridSize>, kGridSize> bricks{};  // [y][x]
  };

  // Breakout has no difficulty ramp; the argument is accepted for the Game
  // interface, as the reference accepts and ignores `ramping`.
  explicit Breakout(bool difficulty_ramping);

  void Reset(Rng& rng);
  Outcome Act(int action, Rng& rng);
  void WriteState(std::uint8_t* grid) const;

  const State& state() const { return state_; }
  State& mutable_state() { return state_; }

 private:
  void FillBrickRows();
  bool AnyBrick() const;

  State state_;
};

}  // namespace rlswarm::envs::minatar
