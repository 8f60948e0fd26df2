#pragma once

// MinAtar Space Invaders: the rules of the reference's
// minatar/environments/space_invaders.py (github.com/kenjyoung/MinAtar,
// commit 6fbf090).
//
// The cannon sits on the bottom row (y = 9) and moves one cell left or right;
// firing (when the 5-step cool-down is over) puts a bullet in the cannon's
// cell, and friendly bullets rise one row per step. A formation of aliens
// (rows 0-3, columns 2-7 at the start) moves one column sideways each time its
// move timer runs out; when an alien touches the edge it is heading for, the
// formation instead descends one row and reverses. The move timer restarts at
// min(aliens left, enemy_move_interval), so a thinning formation speeds up.
// Every 10 steps the lowest alien of the column nearest the cannon (the left
// column on a tie) drops an enemy bullet, which falls one row per step.
// Shooting an alien gives +1 and removes it and the bullet. When the last
// alien is gone a new formation appears, and with difficulty ramping the move
// interval shrinks by one (12 down to 6). The episode ends when an enemy
// bullet or an alien reaches the cannon, or the formation descends while an
// alien is on the bottom row. No step draws a random number.
//
// One step, in the reference's order: the action; friendly bullets rise
// (leaving at the top); enemy bullets fall (leaving at the bottom), hit test;
// the alien hit test, then the formation moves if its timer is 0, hit test;
// an alien shoots if its timer is 0; bullets and aliens sharing a cell
// destroy each other; timers count down; respawn (and ramp) if no alien left.
// Rows wrap as the reference's np.roll does: a formation that descends from
// the bottom row reappears on row 0 in the (terminal) final observation.
//
// Observation channels: 0 cannon, 1 alien, 2 alien moving left, 3 alien moving
// right (2 and 3 copy channel 1 according to the direction), 4 friendly
// bullet, 5 enemy bullet. Not thread-safe.

#include <array>
#include <cstdint>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

class SpaceInvaders {
 public:
  static constexpr const char* kName = "SpaceInvaders";
  static constexpr int kChannels = 6;
  static constexpr std::array<int, 4> kMinimalActions = {kNoop, kLeft, kRight, kFire};

  enum Channel : int {
    kCannonChannel = 0,
    kAlienChannel = 1,
    kAlienLeftChannel = 2,
    kAlienRightChannel = 3,
    kFriendlyBulletChannel = 4,
    kEnemyBulletChannel = 5,
  };

  static constexpr int kShotCoolDown = 5;
  static constexpr int kInitialMoveInterval = 12;
  static constexpr int kMinMoveInterval = 6;  // ramping stops here
  static constexpr int kEnemyShotInterval = 10;

  // A 10x10 board as one bit mask per row: bit x of rows[y] is cell (y, x).
  using Rows = std::array<std::uint16_t, kGridSize>;

  // Everything that evolves in an episode; public so tests can build
  // positions by hand.
  struct State {
    int pos = 5;  // the cannon's column
    Rows aliens{};
    Rows friendly_bullets{};
    Rows enemy_bullets{};
    int alien_dir = -1;  // -1 left, +1 right
    int enemy_move_interval = kInitialMoveInterval;
    int alien_move_timer = kInitialMoveInterval;
    int alien_shot_timer = kEnemyShotInterval;
    int ramp_index = 0;
    int shot_timer = 0;
    bool terminal = false;
  };

  explicit SpaceInvaders(bool difficulty_ramping);

  void Reset(Rng& rng);
  Outcome Act(int action, Rng& rng);
  void WriteState(std::uint8_t* grid) const;

  const State& state() const { return state_; }
  State& mutable_state() { return state_; }

 private:
  // Sets rows 0-3, columns 2-7 of `aliens`: the formation of a new wave.
  static void FillFormation(Rows& aliens);

  State state_;
  bool ramping_;
};

}  // namespace rlswarm::envs::minatar
