#include "envs/minatar/seaquest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "envs/minatar/minatar_env.h"
#include "envs/minatar/observed_grid.h"

namespace rlswarm::envs::minatar {
namespace {

using Bullet = Seaquest::Bullet;
using Mover = Seaquest::Mover;
using EnemySub = Seaquest::EnemySub;

constexpr int kC = Seaquest::kChannels;
constexpr bool kRight_ = true;  // directions of movers, for readability
constexpr bool kLeft_ = false;

Mover M(int x, int y, bool right, int timer) {
  return {static_cast<std::int8_t>(x), static_cast<std::int8_t>(y), right,
          static_cast<std::int8_t>(timer)};
}
EnemySub S(int x, int y, bool right, int move_timer, int shot_timer) {
  return {static_cast<std::int8_t>(x), static_cast<std::int8_t>(y), right,
          static_cast<std::int8_t>(move_timer), static_cast<std::int8_t>(shot_timer)};
}
Bullet B(int x, int y, bool right) {
  return {static_cast<std::int8_t>(x), static_cast<std::int8_t>(y), right};
}

template <class T, int N>
std::vector<T> Items(const Seaquest::FixedList<T, N>& list) {
  return {list.begin(), list.end()};
}

// A game after Reset, with the spawn timers pushed out of the way so a test
// changes only what it is about, and the sub placed below the surface.
struct Fixture {
  explicit Fixture(bool ramping = true) : game(ramping) {
    game.Reset(rng);
    s().enemy_spawn_timer = 1000;
    s().diver_spawn_timer = 1000;
    s().sub_y = 3;
    s().surfaced = false;
  }
  Seaquest::State& s() { return game.mutable_state(); }
  Outcome Act(int action) { return game.Act(action, rng); }

  Rng rng{1};
  Seaquest game;
};

using Grid = GridOf<kC>;

int CountChannel(const Grid& grid, int c) {
  int n = 0;
  for (int i = 0; i < kGridSize * kGridSize; ++i) n += grid[i * kC + c];
  return n;
}

TEST(SeaquestFixedListTest, RemoveErasesTheFirstEqualElementAndKeepsTheOrder) {
  Seaquest::FixedList<Bullet, 4> list;
  list.Append(B(1, 1, kRight_));
  list.Append(B(2, 2, kRight_));
  list.Append(B(1, 1, kRight_));
  list.Append(B(3, 3, kLeft_));
  EXPECT_EQ(list.Remove(B(1, 1, kRight_)), 0);
  EXPECT_EQ(Items(list),
            (std::vector<Bullet>{B(2, 2, kRight_), B(1, 1, kRight_), B(3, 3, kLeft_)}));
  EXPECT_EQ(list.Remove(B(1, 1, kLeft_)), -1);
  list.EraseAt(1);
  EXPECT_EQ(Items(list), (std::vector<Bullet>{B(2, 2, kRight_), B(3, 3, kLeft_)}));
}

TEST(SeaquestTest, ResetStartsAtTheSurfaceWithFullOxygen) {
  Seaquest game(true);
  Rng rng(1);
  game.Reset(rng);
  const auto& s = game.state();
  EXPECT_EQ(s.sub_x, 5);
  EXPECT_EQ(s.sub_y, 0);
  EXPECT_FALSE(s.sub_right);
  EXPECT_EQ(s.oxygen, 200);
  EXPECT_EQ(s.diver_count, 0);
  EXPECT_EQ(s.enemy_spawn_timer, 20);
  EXPECT_EQ(s.diver_spawn_timer, 30);
  EXPECT_EQ(s.move_interval, 5);
  EXPECT_TRUE(s.surfaced);
  const auto grid = Observe(game);
  EXPECT_TRUE(At(grid, 0, 5, Seaquest::kSubFrontChannel));
  EXPECT_TRUE(At(grid, 0, 6, Seaquest::kSubBackChannel));  // facing left
  EXPECT_EQ(CountChannel(grid, Seaquest::kOxygenGaugeChannel), 10);
  EXPECT_EQ(CountChannel(grid, Seaquest::kDiverGaugeChannel), 0);
}

TEST(SeaquestTest, MinimalActionSetIsTheFullSet) {
  EXPECT_EQ(Seaquest::kMinimalActions, (std::array<int, 6>{0, 1, 2, 3, 4, 5}));
}

TEST(SeaquestTest, SubMovesTurnsAndStaysAboveTheGauges) {
  Fixture f;
  f.Act(kRight);
  EXPECT_EQ(f.s().sub_x, 6);
  EXPECT_TRUE(f.s().sub_right);
  f.Act(kLeft);
  EXPECT_EQ(f.s().sub_x, 5);
  EXPECT_FALSE(f.s().sub_right);
  f.Act(kUp);
  EXPECT_EQ(f.s().sub_y, 2);
  for (int i = 0; i < 10; ++i) f.Act(kDown);
  EXPECT_EQ(f.s().sub_y, 8);
  f.s().sub_x = 0;
  f.Act(kLeft);
  EXPECT_EQ(f.s().sub_x, 0);
}

TEST(SeaquestTest, ShootingAFishGivesOneAndRemovesFishAndBullet) {
  Fixture f;
  f.s().sub_right = true;
  f.s().fish.Append(M(6, 3, kLeft_, 3));
  f.s().fish.Append(M(2, 5, kRight_, 3));
  const Outcome o = f.Act(kFire);  // the bullet moves from the sub onto the fish
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(Items(f.s().fish), (std::vector<Mover>{M(2, 5, kRight_, 2)}));
  EXPECT_TRUE(f.s().friendly_bullets.empty());
  EXPECT_EQ(f.s().shot_timer, 4);
}

TEST(SeaquestTest, ShootingAnEnemySubGivesOne) {
  Fixture f;
  f.s().subs.Append(S(3, 6, kRight_, 3, 5));
  f.s().friendly_bullets.Append(B(4, 6, kLeft_));
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_TRUE(f.s().subs.empty());
  EXPECT_TRUE(f.s().friendly_bullets.empty());
}

TEST(SeaquestTest, ABulletKillsTheOldestFishInItsCellBeforeAnySub) {
  Fixture f;
  f.s().subs.Append(S(7, 6, kLeft_, 3, 5));
  f.s().fish.Append(M(7, 6, kLeft_, 2));
  f.s().fish.Append(M(7, 6, kLeft_, 4));
  f.s().friendly_bullets.Append(B(6, 6, kRight_));
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_EQ(Items(f.s().fish), (std::vector<Mover>{M(7, 6, kLeft_, 3)}));
  EXPECT_EQ(f.s().subs.size(), 1);
}

TEST(SeaquestTest, EnemyMovingOntoABulletIsKilled) {
  Fixture f;
  f.s().friendly_bullets.Append(B(3, 6, kRight_));  // moves to 4
  f.s().fish.Append(M(5, 6, kLeft_, 0));            // moves to 4
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_TRUE(f.s().fish.empty());
  EXPECT_TRUE(f.s().friendly_bullets.empty());

  f.s().friendly_bullets.Append(B(3, 6, kRight_));
  f.s().subs.Append(S(5, 6, kLeft_, 0, 5));
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_TRUE(f.s().subs.empty());
  EXPECT_TRUE(f.s().friendly_bullets.empty());
}

TEST(SeaquestTest, EnemiesMoveOnceEveryMoveIntervalPlusOneSteps) {
  Fixture f;
  f.s().fish.Append(M(0, 6, kRight_, 5));
  for (int i = 0; i < 5; ++i) f.Act(kNoop);
  EXPECT_EQ(f.s().fish[0].x, 0);
  f.Act(kNoop);
  EXPECT_EQ(f.s().fish[0], M(1, 6, kRight_, 5));
  f.s().move_interval = 2;
  for (int i = 0; i < 6; ++i) f.Act(kNoop);  // 5 more steps at the old timer
  EXPECT_EQ(f.s().fish[0], M(2, 6, kRight_, 2));
  for (int i = 0; i < 3; ++i) f.Act(kNoop);
  EXPECT_EQ(f.s().fish[0], M(3, 6, kRight_, 2));
}

TEST(SeaquestTest, EnemyLeavingTheGridIsRemoved) {
  Fixture f;
  f.s().fish.Append(M(9, 6, kRight_, 0));
  f.s().subs.Append(S(0, 7, kLeft_, 0, 5));
  f.Act(kNoop);
  EXPECT_TRUE(f.s().fish.empty());
  EXPECT_TRUE(f.s().subs.empty());
}

TEST(SeaquestTest, EnemySubFiresEveryElevenSteps) {
  Fixture f;
  f.s().subs.Append(S(2, 6, kRight_, 50, 0));
  f.Act(kNoop);
  // Fired from the sub's cell, and moved in the same step.
  EXPECT_EQ(Items(f.s().enemy_bullets), (std::vector<Bullet>{B(3, 6, kRight_)}));
  EXPECT_EQ(f.s().subs[0].shot_timer, 10);
  for (int i = 0; i < 10; ++i) f.Act(kNoop);
  EXPECT_TRUE(f.s().enemy_bullets.empty());  // left the grid at x = 10
  EXPECT_EQ(f.s().subs[0].shot_timer, 0);
  f.Act(kNoop);
  EXPECT_EQ(Items(f.s().enemy_bullets), (std::vector<Bullet>{B(3, 6, kRight_)}));
}

TEST(SeaquestTest, SubShotWhileItsShotTimerIsZeroStillFires) {
  // The reference's loop body goes on with a sub it removed.
  Fixture f;
  f.s().friendly_bullets.Append(B(3, 6, kRight_));
  f.s().subs.Append(S(5, 6, kLeft_, 0, 0));
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_TRUE(f.s().subs.empty());
  EXPECT_EQ(Items(f.s().enemy_bullets), (std::vector<Bullet>{B(3, 6, kLeft_)}));
}

TEST(SeaquestTest, TouchingAnEnemyOrEnemyBulletTerminates) {
  {
    Fixture f;  // a fish moves onto the sub
    f.s().fish.Append(M(6, 3, kLeft_, 0));
    EXPECT_TRUE(f.Act(kNoop).terminal);
  }
  {
    Fixture f;  // the sub moves onto a fish
    f.s().fish.Append(M(6, 3, kLeft_, 3));
    EXPECT_TRUE(f.Act(kRight).terminal);
  }
  {
    Fixture f;  // an enemy sub
    f.s().subs.Append(S(5, 4, kLeft_, 3, 5));
    EXPECT_TRUE(f.Act(kDown).terminal);
  }
  {
    Fixture f;  // an enemy bullet
    f.s().enemy_bullets.Append(B(7, 3, kLeft_));
    EXPECT_FALSE(f.Act(kNoop).terminal);
    EXPECT_TRUE(f.Act(kNoop).terminal);
  }
  {
    Fixture f;  // passing next to them is safe
    f.s().fish.Append(M(6, 4, kLeft_, 0));
    f.s().enemy_bullets.Append(B(7, 2, kLeft_));
    EXPECT_FALSE(f.Act(kNoop).terminal);
  }
}

TEST(SeaquestTest, OxygenDropsBelowTheSurfaceAndRunningOutTerminates) {
  Fixture f;
  f.s().oxygen = 2;
  EXPECT_FALSE(f.Act(kNoop).terminal);
  EXPECT_EQ(f.s().oxygen, 1);
  EXPECT_FALSE(f.Act(kNoop).terminal);
  EXPECT_EQ(f.s().oxygen, 0);
  EXPECT_TRUE(f.Act(kNoop).terminal);

  Seaquest game(true);  // at the surface oxygen lasts
  Rng rng(1);
  game.Reset(rng);
  game.mutable_state().enemy_spawn_timer = 1000;
  game.mutable_state().diver_spawn_timer = 1000;
  for (int i = 0; i < 300; ++i) EXPECT_FALSE(game.Act(kNoop, rng).terminal);
  EXPECT_EQ(game.state().oxygen, 200);
}

TEST(SeaquestTest, SurfacingWithoutADiverTerminates) {
  Fixture f;
  f.s().sub_y = 1;
  EXPECT_TRUE(f.Act(kUp).terminal);
}

TEST(SeaquestTest, SurfacingWithSomeDiversDropsOneRefillsOxygenAndRamps) {
  Fixture f;
  f.s().sub_y = 1;
  f.s().diver_count = 3;
  f.s().oxygen = 50;
  const Outcome o = f.Act(kUp);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(o.reward, 0.0f);
  EXPECT_EQ(f.s().diver_count, 2);
  EXPECT_EQ(f.s().oxygen, 200);
  EXPECT_TRUE(f.s().surfaced);
  EXPECT_EQ(f.s().ramp_index, 1);
  EXPECT_EQ(f.s().enemy_spawn_interval, 19);
  EXPECT_EQ(f.s().move_interval, 5);
  // Staying up is not surfacing again.
  EXPECT_FALSE(f.Act(kNoop).terminal);
  EXPECT_EQ(f.s().diver_count, 2);
}

TEST(SeaquestTest, SurfacingWithSixDiversPaysForTheOxygenLeft) {
  Fixture f;
  f.s().sub_y = 1;
  f.s().diver_count = 6;
  f.s().oxygen = 151;  // the step leaves it at 151: 1510 / 200 = 7
  const Outcome o = f.Act(kUp);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(o.reward, 7.0f);
  EXPECT_EQ(f.s().oxygen, 200);
  EXPECT_EQ(f.s().ramp_index, 1);
  // The reference zeroes the count and then drops a diver: -1, with which the
  // next surfacing is survived.
  EXPECT_EQ(f.s().diver_count, -1);
  f.Act(kDown);
  EXPECT_FALSE(f.Act(kUp).terminal);
  EXPECT_EQ(f.s().diver_count, -2);
}

TEST(SeaquestTest, RampingSpeedsUpSpawnsEverySurfacingAndMovesEverySecond) {
  Fixture f;
  f.s().sub_y = 1;
  std::vector<int> spawn, move;
  for (int i = 0; i < 21; ++i) {
    f.s().diver_count = 2;
    ASSERT_FALSE(f.Act(kUp).terminal);  // surfaces
    f.Act(kDown);
    spawn.push_back(f.s().enemy_spawn_interval);
    move.push_back(f.s().move_interval);
  }
  EXPECT_EQ(spawn, (std::vector<int>{19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9,
                                     8,  7,  6,  5,  4,  3,  2,  1,  1,  1}));
  EXPECT_EQ(move,
            (std::vector<int>{5, 4, 4, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(f.s().ramp_index, 19);
}

TEST(SeaquestTest, WithoutRampingSurfacingKeepsTheSpeeds) {
  Fixture f(/*ramping=*/false);
  f.s().sub_y = 1;
  f.s().diver_count = 2;
  f.Act(kUp);
  EXPECT_EQ(f.s().diver_count, 1);
  EXPECT_EQ(f.s().enemy_spawn_interval, 20);
  EXPECT_EQ(f.s().move_interval, 5);
  EXPECT_EQ(f.s().ramp_index, 0);
}

TEST(SeaquestTest, SubPicksUpDiversUpToSix) {
  Fixture f;
  f.s().divers.Append(M(5, 4, kRight_, 3));
  f.Act(kDown);  // onto the diver
  EXPECT_EQ(f.s().diver_count, 1);
  EXPECT_TRUE(f.s().divers.empty());

  f.s().divers.Append(M(4, 4, kRight_, 0));  // the diver moves onto the sub
  f.Act(kNoop);
  EXPECT_EQ(f.s().diver_count, 2);
  EXPECT_TRUE(f.s().divers.empty());

  f.s().diver_count = 6;
  f.s().divers.Append(M(4, 4, kRight_, 0));
  f.Act(kNoop);
  EXPECT_EQ(f.s().diver_count, 6);
  EXPECT_EQ(Items(f.s().divers), (std::vector<Mover>{M(5, 4, kRight_, 5)}));
  f.Act(kNoop);  // still full: the diver stays in the sub's cell
  EXPECT_EQ(f.s().diver_count, 6);
  EXPECT_EQ(Items(f.s().divers), (std::vector<Mover>{M(5, 4, kRight_, 4)}));
}

TEST(SeaquestTest, DiversMoveEverySixStepsAndLeaveAtTheEdge) {
  Fixture f;
  f.s().divers.Append(M(9, 7, kRight_, 5));
  for (int i = 0; i < 5; ++i) f.Act(kNoop);
  EXPECT_EQ(f.s().divers.size(), 1);
  f.Act(kNoop);
  EXPECT_TRUE(f.s().divers.empty());
}

TEST(SeaquestTest, EnemiesAndDiversSpawnOnTheirTimers) {
  Seaquest game(true);
  Rng rng(5);
  game.Reset(rng);
  for (int i = 0; i < 20; ++i) game.Act(kNoop, rng);
  EXPECT_EQ(game.state().fish.size() + game.state().subs.size(), 0);
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().fish.size() + game.state().subs.size(), 1);
  EXPECT_EQ(game.state().enemy_spawn_timer, 19);
  for (int i = 0; i < 9; ++i) game.Act(kNoop, rng);
  EXPECT_TRUE(game.state().divers.empty());
  game.Act(kNoop, rng);
  ASSERT_EQ(game.state().divers.size(), 1);
  const Mover& d = game.state().divers[0];
  EXPECT_EQ(d.x, d.right ? 0 : 9);
  EXPECT_GE(d.y, 1);
  EXPECT_LE(d.y, 8);
}

TEST(SeaquestTest, EnemySpawnDrawsSideThenKindThenRow) {
  int subs = 0, rights = 0;
  std::vector<int> rows(kGridSize, 0);
  for (std::uint64_t seed = 0; seed < 3000; ++seed) {
    Fixture f;
    f.rng.Seed(seed);
    f.s().enemy_spawn_timer = 0;
    Rng expect = f.rng;
    const bool right = expect.Uniform01() < 0.5;
    const bool is_sub = expect.Uniform01() < 1.0 / 3.0;
    const int y = static_cast<int>(expect.Integer(1, 9));
    f.Act(kNoop);
    ASSERT_EQ(f.s().fish.size() + f.s().subs.size(), 1);
    if (is_sub) {
      ASSERT_EQ(f.s().subs.size(), 1);
      EXPECT_EQ(f.s().subs[0], S(right ? 0 : 9, y, right, 4, 9));
    } else {
      ASSERT_EQ(f.s().fish.size(), 1);
      EXPECT_EQ(f.s().fish[0], M(right ? 0 : 9, y, right, 4));
    }
    // Those were the only draws of the step.
    EXPECT_EQ(f.rng.NextU64(), expect.NextU64());
    subs += is_sub;
    rights += right;
    ++rows[y];
  }
  EXPECT_NEAR(subs / 3000.0, 1.0 / 3.0, 0.03);
  EXPECT_NEAR(rights / 3000.0, 0.5, 0.03);
  EXPECT_EQ(rows[0], 0);
  EXPECT_EQ(rows[9], 0);
  for (int y = 1; y <= 8; ++y) EXPECT_GT(rows[y], 250) << y;
}

TEST(SeaquestTest, NoEnemySpawnsIntoARowWithAnEnemyComingTheOtherWay) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Fixture f;
    f.rng.Seed(seed);
    f.s().enemy_spawn_timer = 0;
    f.s().sub_y = 0;
    Rng expect = f.rng;
    const bool right = expect.Uniform01() < 0.5;
    expect.Uniform01();
    const int y = static_cast<int>(expect.Integer(1, 9));
    f.s().fish.Append(M(4, y, !right, 3));
    f.Act(kNoop);
    EXPECT_EQ(f.s().fish.size(), 1);
    EXPECT_TRUE(f.s().subs.empty());
    EXPECT_EQ(f.rng.NextU64(), expect.NextU64());  // drawn all the same
  }
}

TEST(SeaquestTest, TerminalGameIgnoresActions) {
  Fixture f;
  f.s().terminal = true;
  const Outcome o = f.Act(kDown);
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(o.reward, 0.0f);
  EXPECT_EQ(f.s().sub_y, 3);
}

TEST(SeaquestTest, ObservationChannelsFollowTheState) {
  Fixture f;
  auto& s = f.s();
  s.sub_x = 4;
  s.sub_y = 2;
  s.sub_right = true;
  s.oxygen = 95;      // 4 cells
  s.diver_count = 3;  // columns 6-8
  s.friendly_bullets.Append(B(7, 2, kRight_));
  s.enemy_bullets.Append(B(1, 5, kLeft_));
  s.fish.Append(M(3, 6, kRight_, 1));
  s.subs.Append(S(0, 7, kLeft_, 1, 1));
  s.divers.Append(M(9, 8, kRight_, 1));  // its trail at (8, 8)
  const auto grid = Observe(f.game);
  EXPECT_TRUE(At(grid, 2, 4, Seaquest::kSubFrontChannel));
  EXPECT_TRUE(At(grid, 2, 3, Seaquest::kSubBackChannel));
  EXPECT_TRUE(At(grid, 2, 7, Seaquest::kFriendlyBulletChannel));
  EXPECT_TRUE(At(grid, 5, 1, Seaquest::kEnemyBulletChannel));
  EXPECT_TRUE(At(grid, 6, 3, Seaquest::kEnemyFishChannel));
  EXPECT_TRUE(At(grid, 7, 0, Seaquest::kEnemySubChannel));
  EXPECT_TRUE(At(grid, 8, 9, Seaquest::kDiverChannel));
  EXPECT_TRUE(At(grid, 6, 2, Seaquest::kTrailChannel));
  EXPECT_TRUE(At(grid, 7, 1, Seaquest::kTrailChannel));
  EXPECT_TRUE(At(grid, 8, 8, Seaquest::kTrailChannel));
  EXPECT_EQ(CountChannel(grid, Seaquest::kTrailChannel), 3);
  for (int x = 0; x < kGridSize; ++x) {
    EXPECT_EQ(At(grid, 9, x, Seaquest::kOxygenGaugeChannel), x < 4) << x;
    EXPECT_EQ(At(grid, 9, x, Seaquest::kDiverGaugeChannel), x >= 6 && x <= 8) << x;
  }
  int ones = 0;
  for (std::uint8_t v : grid) ones += v;
  EXPECT_EQ(ones, 2 + 1 + 1 + 3 + 1 + 1 + 1 + 4 + 3);

  s.oxygen = -1;       // after running out
  s.diver_count = -1;  // after a six-diver bonus
  const auto empty_gauges = Observe(f.game);
  EXPECT_EQ(CountChannel(empty_gauges, Seaquest::kOxygenGaugeChannel), 0);
  EXPECT_EQ(CountChannel(empty_gauges, Seaquest::kDiverGaugeChannel), 0);
}

TEST(SeaquestTest, CrowdedFastGameStaysWithinCapacity) {
  // Fastest ramp, sub safe at the surface: the lists fill to their steady
  // state; an overflow would abort.
  Seaquest game(true);
  Rng rng(11);
  game.Reset(rng);
  game.mutable_state().enemy_spawn_interval = 1;
  game.mutable_state().move_interval = 2;
  int most = 0;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_FALSE(game.Act(i % 2 ? kFire : kNoop, rng).terminal);
    const auto& s = game.state();
    most = std::max(most, s.fish.size() + s.subs.size());
  }
  EXPECT_GT(most, 10);
}

// Through the Env adapter.

std::vector<std::vector<std::byte>> Play(std::uint64_t seed, double sticky, int steps,
                                         int fixed_action = -1) {
  MinAtarOptions options;
  options.sticky_action_prob = sticky;
  MinAtarEnv<Seaquest> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  std::vector<std::vector<std::byte>> trajectory;
  env.Reset(seed, obs);
  trajectory.push_back(obs);
  Rng policy(1000);  // the same actions whatever the seed
  for (int i = 0; i < steps; ++i) {
    const int action = fixed_action >= 0 ? fixed_action : static_cast<int>(policy.Below(6));
    const StepResult r = env.Step(action, obs);
    trajectory.push_back(obs);
    if (r.terminated) env.Reset(std::nullopt, obs);
  }
  return trajectory;
}

bool ObsAt(const std::vector<std::byte>& obs, int y, int x, int c) {
  return obs[(y * kGridSize + x) * kC + c] != std::byte{0};
}

TEST(SeaquestEnvTest, SameSeedGivesTheSameTrajectory) {
  EXPECT_EQ(Play(7, 0.1, 2000), Play(7, 0.1, 2000));
  EXPECT_NE(Play(7, 0.1, 2000), Play(8, 0.1, 2000));
}

TEST(SeaquestEnvTest, WithStickyProbabilityOneTheActionNeverTakesEffect) {
  // The first step repeats the no-op that Reset starts from, and so on: the
  // sub never leaves its start cell.
  for (const auto& obs : Play(3, 1.0, 100, kDown)) EXPECT_TRUE(ObsAt(obs, 0, 5, 0));
  EXPECT_TRUE(ObsAt(Play(3, 0.0, 1, kDown)[1], 1, 5, 0));  // control
}

}  // namespace
}  // namespace rlswarm::envs::minatar
