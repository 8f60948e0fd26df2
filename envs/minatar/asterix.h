#pragma once

// MinAtar Asterix: the rules of the reference's minatar/environments/asterix.py
// (github.com/kenjyoung/MinAtar, commit 6fbf090).
//
// The player starts at (x 5, y 5) and moves one cell per step in x (0-9) or y
// (1-8). Rows 1-8 each hold at most one entity (slot i is row i + 1): an enemy
// or gold, entering at the left edge moving right or at the right edge moving
// left. When the spawn timer is 0 an entity spawns: right-moving with
// probability 1/2, gold with probability 1/3, in a uniformly drawn free slot
// (both coins are drawn even when no slot is free, and then nothing spawns);
// the timer restarts at spawn_speed (init 10). When the move timer is 0 every
// entity moves one cell, leaving the grid at the far edge, and the timer
// restarts at move_speed (init 5). Both timers count down once per step.
// Touching gold gives +1 and removes it; touching an enemy ends the episode.
// Difficulty ramping (on by default): ramp_timer starts at 100 and counts down
// once per step; a step that finds it at -1 ramps instead (so the first ramp
// is on step 102, then every 102 steps): spawn_speed drops by 1 (down to 1),
// move_speed drops by 1 (down to 1) when ramp_index is odd, ramp_index counts
// the ramp and ramp_timer restarts at 100. All of it stops once both speeds
// are 1.
//
// One step, in the reference's order: spawn; move the player; collide every
// entity with the player; if the move timer is 0, move every entity and
// collide it with the player; count down the timers; ramp the difficulty.
//
// Observation channels: 0 player, 1 enemy, 2 trail (the cell each entity came
// from, when on the grid), 3 gold. Not thread-safe.

#include <array>
#include <cstdint>
#include <optional>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

class Asterix {
 public:
  static constexpr const char* kName = "Asterix";
  static constexpr int kChannels = 4;
  static constexpr std::array<int, 5> kMinimalActions = {kNoop, kLeft, kUp, kRight, kDown};

  enum Channel : int { kPlayerChannel = 0, kEnemyChannel = 1, kTrailChannel = 2, kGoldChannel = 3 };
  static constexpr int kNumSlots = 8;
  static constexpr int kRampInterval = 100;
  static constexpr int kInitSpawnSpeed = 10;
  static constexpr int kInitMoveInterval = 5;

  // An enemy or gold; its row is its slot index + 1.
  struct Entity {
    int x = 0;
    bool moving_right = false;
    bool gold = false;
  };

  // Everything that evolves in an episode; public so tests can build
  // positions by hand.
  struct State {
    int player_x = 5;
    int player_y = 5;
    std::array<std::optional<Entity>, kNumSlots> entities{};
    int spawn_speed = kInitSpawnSpeed;
    int spawn_timer = kInitSpawnSpeed;
    int move_speed = kInitMoveInterval;
    int move_timer = kInitMoveInterval;
    int ramp_timer = kRampInterval;
    int ramp_index = 0;  // the reference's difficulty_ramp()
    bool terminal = false;
  };

  explicit Asterix(bool difficulty_ramping) : ramping_(difficulty_ramping) {}

  void Reset(Rng& rng);
  Outcome Act(int action, Rng& rng);
  void WriteState(std::uint8_t* grid) const;

  const State& state() const { return state_; }
  State& mutable_state() { return state_; }

 private:
  void SpawnEntity(Rng& rng);
  // Gold in slot `i` on the player's cell is collected, an enemy ends the episode.
  void Collide(int i, Outcome& out);

  bool ramping_;
  State state_;
};

}  // namespace rlswarm::envs::minatar
