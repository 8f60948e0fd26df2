#pragma once

// MinAtar Seaquest: the rules of the reference's
// minatar/environments/seaquest.py (github.com/kenjyoung/MinAtar, commit
// 6fbf090).
//
// The player's submarine (a front cell and, behind it, a back cell) moves one
// cell per step in rows 0-8 and fires bullets (5-step cool-down) that travel
// one cell per step the way it faces. Enemy fish and enemy subs enter at the
// left or right edge of a random row 1-8 every enemy_spawn_interval steps
// (a third are subs; a spawn is skipped if the row holds an enemy going the
// other way) and move one cell every move_interval + 1 steps; subs also fire
// a bullet every 11 steps, which moves one cell per step. Shooting an enemy
// gives +1. Divers enter every 30 steps and move one cell every 6 steps; the
// player picks one up by sharing its cell (at most 6 on board). Oxygen starts
// at 200 and drops by one per step below the surface. Reaching the surface
// (row 0) after a dive ends the episode with no diver on board; otherwise
// oxygen is refilled, one diver is dropped, or, with exactly 6, all six are
// dropped for a bonus of oxygen * 10 / 200, and with difficulty ramping
// enemies spawn one step sooner (down to every step) and, every second
// surfacing, move one step sooner (down to every 3 steps). The episode also
// ends when the player shares a cell with an enemy or an enemy bullet, or a
// step begins with no oxygen left.
//
// As in the reference, the 6-diver bonus leaves diver_count at -1 (it is set
// to 0 and then decremented like any surfacing), so the next surfacing is
// survived with no diver on board, and so on.
//
// One step, in the reference's order: spawn an enemy, then a diver, when their
// timers are 0; the action; friendly bullets move and hit (fish first, then
// subs); divers; enemy subs (move, hit, shoot); enemy bullets; enemy fish;
// timers; oxygen and surfacing. Each list is walked as the reference walks
// its Python list: newest first, removing with list.remove (the first equal
// element), and a sub removed during its own update still fires if its shot
// timer is 0.
//
// Observation channels: 0 sub front, 1 sub back, 2 friendly bullet, 3 trail
// (the cell behind each fish, sub and diver), 4 enemy bullet, 5 enemy fish,
// 6 enemy sub, 7 oxygen gauge, 8 diver gauge (both on row 9), 9 diver.
// Not thread-safe.

#include <array>
#include <cstdint>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

class Seaquest {
 public:
  static constexpr const char* kName = "Seaquest";
  static constexpr int kChannels = 10;
  static constexpr std::array<int, 6> kMinimalActions = {kNoop, kLeft, kUp, kRight, kDown, kFire};

  enum Channel : int {
    kSubFrontChannel = 0,
    kSubBackChannel = 1,
    kFriendlyBulletChannel = 2,
    kTrailChannel = 3,
    kEnemyBulletChannel = 4,
    kEnemyFishChannel = 5,
    kEnemySubChannel = 6,
    kOxygenGaugeChannel = 7,
    kDiverGaugeChannel = 8,
    kDiverChannel = 9,
  };

  static constexpr int kMaxOxygen = 200;
  static constexpr int kInitialSpawnInterval = 20;
  static constexpr int kDiverSpawnInterval = 30;
  static constexpr int kInitialMoveInterval = 5;
  static constexpr int kShotCoolDown = 5;
  static constexpr int kEnemyShotInterval = 10;
  static constexpr int kDiverMoveInterval = 5;
  static constexpr int kMaxDivers = 6;

  // A Python list with a fixed capacity: insertion order and list.remove's
  // semantics, no allocation. Exceeding the capacity is a broken invariant
  // (the capacities below are proven bounds) and aborts.
  template <class T, int kCapacity>
  class FixedList {
   public:
    int size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T& operator[](int i) { return items_[i]; }
    const T& operator[](int i) const { return items_[i]; }
    const T* begin() const { return items_.data(); }
    const T* end() const { return items_.data() + size_; }

    void Append(const T& item) {
      if (size_ == kCapacity) CapacityExceeded(kCapacity);
      items_[size_++] = item;
    }
    // Removes element i, keeping the order of the others.
    void EraseAt(int i) {
      for (int j = i + 1; j < size_; ++j) items_[j - 1] = items_[j];
      --size_;
    }
    // Python's list.remove: erases the first element equal to `item` and
    // returns its index, or -1 if there is none.
    int Remove(T item) {
      for (int i = 0; i < size_; ++i) {
        if (items_[i] == item) {
          EraseAt(i);
          return i;
        }
      }
      return -1;
    }

   private:
    std::array<T, kCapacity> items_{};
    int size_ = 0;
  };

  // A bullet of either side; enemy bullets take the direction of their sub.
  struct Bullet {
    std::int8_t x;
    std::int8_t y;
    bool right;
    bool operator==(const Bullet&) const = default;
  };
  // A fish or a diver.
  struct Mover {
    std::int8_t x;
    std::int8_t y;
    bool right;
    std::int8_t move_timer;
    bool operator==(const Mover&) const = default;
  };
  struct EnemySub {
    std::int8_t x;
    std::int8_t y;
    bool right;
    std::int8_t move_timer;
    std::int8_t shot_timer;
    bool operator==(const EnemySub&) const = default;
  };

  // Capacities, from the rules: an enemy leaves the grid at most 59 steps
  // after it spawns (10 moves, each within 6 steps) and at most one spawns
  // per step, so at most 60 are alive; a sub fires at most once in 11 steps
  // and its bullet leaves within 10, so at most 70 enemy bullets; the player
  // fires at most once in 5 steps and a bullet leaves within 10, so at most
  // 3; a diver leaves within 59 steps and one spawns every 30, so at most 3.
  static constexpr int kMaxEnemies = 64;
  static constexpr int kMaxEnemyBullets = 80;
  static constexpr int kMaxFriendlyBullets = 4;
  static constexpr int kMaxDiversOnGrid = 4;

  // Everything that evolves in an episode; public so tests can build
  // positions by hand. Field names follow the reference where they say what
  // they are; its e_spawn_speed and move_speed are intervals in steps.
  struct State {
    int oxygen = kMaxOxygen;
    int diver_count = 0;  // may go negative, see above
    int sub_x = 5;
    int sub_y = 0;
    bool sub_right = false;  // the direction the sub faces
    FixedList<Bullet, kMaxFriendlyBullets> friendly_bullets;
    FixedList<Bullet, kMaxEnemyBullets> enemy_bullets;
    FixedList<Mover, kMaxEnemies> fish;
    FixedList<EnemySub, kMaxEnemies> subs;
    FixedList<Mover, kMaxDiversOnGrid> divers;
    int enemy_spawn_interval = kInitialSpawnInterval;
    int enemy_spawn_timer = kInitialSpawnInterval;
    int diver_spawn_timer = kDiverSpawnInterval;
    int move_interval = kInitialMoveInterval;
    int ramp_index = 0;
    int shot_timer = 0;
    bool surfaced = true;  // at the surface since the last surfacing
    bool terminal = false;
  };

  explicit Seaquest(bool difficulty_ramping);

  void Reset(Rng& rng);
  Outcome Act(int action, Rng& rng);
  void WriteState(std::uint8_t* grid) const;

  const State& state() const { return state_; }
  State& mutable_state() { return state_; }

 private:
  void SpawnEnemy(Rng& rng);
  void SpawnDiver(Rng& rng);
  void MovePlayer(int action);
  int UpdateFriendlyBullets();
  void UpdateDivers();
  int UpdateEnemySubs();
  void UpdateEnemyBullets();
  int UpdateEnemyFish();
  int Surface();
  bool AtPlayer(int x, int y) const { return x == state_.sub_x && y == state_.sub_y; }
  [[noreturn]] static void CapacityExceeded(int capacity);

  State state_;
  bool ramping_;
};

}  // namespace rlswarm::envs::minatar
