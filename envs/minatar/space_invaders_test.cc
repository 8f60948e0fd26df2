#include "envs/minatar/space_invaders.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

#include "envs/minatar/minatar_env.h"
#include "envs/minatar/observed_grid.h"

namespace rlswarm::envs::minatar {
namespace {

using Rows = SpaceInvaders::Rows;
using Cells = std::vector<std::pair<int, int>>;  // (y, x)

constexpr int kC = SpaceInvaders::kChannels;

Rows Board(std::initializer_list<std::pair<int, int>> cells) {
  Rows rows{};
  for (auto [y, x] : cells) rows[y] |= static_cast<std::uint16_t>(1u << x);
  return rows;
}

Cells CellsOf(const Rows& rows) {
  Cells cells;
  for (int y = 0; y < kGridSize; ++y) {
    for (int x = 0; x < kGridSize; ++x) {
      if (rows[y] & (1u << x)) cells.emplace_back(y, x);
    }
  }
  return cells;
}

using Grid = GridOf<kC>;

// A game after Reset, with timers pushed out of the way so a test changes
// only what it is about.
struct Fixture {
  explicit Fixture(bool ramping = true) : game(ramping) {
    game.Reset(rng);
    s().alien_move_timer = 100;
    s().alien_shot_timer = 100;
  }
  SpaceInvaders::State& s() { return game.mutable_state(); }
  Outcome Act(int action) { return game.Act(action, rng); }

  Rng rng{1};
  SpaceInvaders game;
};

TEST(SpaceInvadersTest, ResetPlacesCannonAndFormation) {
  SpaceInvaders game(true);
  Rng rng(1);
  game.Reset(rng);
  const auto& s = game.state();
  EXPECT_EQ(s.pos, 5);
  Cells formation;
  for (int y = 0; y < 4; ++y) {
    for (int x = 2; x < 8; ++x) formation.emplace_back(y, x);
  }
  EXPECT_EQ(CellsOf(s.aliens), formation);
  EXPECT_EQ(s.alien_dir, -1);
  EXPECT_EQ(s.alien_move_timer, 12);
  EXPECT_EQ(s.alien_shot_timer, 10);
  EXPECT_EQ(s.shot_timer, 0);
  EXPECT_FALSE(s.terminal);
  EXPECT_TRUE(CellsOf(s.friendly_bullets).empty());
  EXPECT_TRUE(CellsOf(s.enemy_bullets).empty());
}

TEST(SpaceInvadersTest, MinimalActionSetIsNoopLeftRightFire) {
  EXPECT_EQ(SpaceInvaders::kMinimalActions, (std::array<int, 4>{0, 1, 3, 5}));
}

TEST(SpaceInvadersTest, CannonMovesLeftAndRightAndStopsAtTheWalls) {
  Fixture f;
  f.Act(kLeft);
  EXPECT_EQ(f.s().pos, 4);
  f.Act(kRight);
  f.Act(kRight);
  EXPECT_EQ(f.s().pos, 6);
  f.Act(kUp);
  f.Act(kDown);
  EXPECT_EQ(f.s().pos, 6);
  f.s().pos = 0;
  f.Act(kLeft);
  EXPECT_EQ(f.s().pos, 0);
  f.s().pos = 9;
  f.Act(kRight);
  EXPECT_EQ(f.s().pos, 9);
}

TEST(SpaceInvadersTest, FiredBulletRisesOneRowPerStepAndLeavesAtTheTop) {
  Fixture f;
  f.s().aliens = Board({{0, 0}});
  f.Act(kFire);
  EXPECT_EQ(CellsOf(f.s().friendly_bullets), (Cells{{8, 5}}));
  EXPECT_EQ(f.s().shot_timer, 4);
  for (int i = 0; i < 8; ++i) f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().friendly_bullets), (Cells{{0, 5}}));
  f.Act(kNoop);
  EXPECT_TRUE(CellsOf(f.s().friendly_bullets).empty());
}

TEST(SpaceInvadersTest, FireIsIgnoredDuringTheCoolDown) {
  Fixture f;
  f.s().aliens = Board({{0, 0}});
  for (int i = 0; i < 5; ++i) f.Act(kFire);
  EXPECT_EQ(CellsOf(f.s().friendly_bullets), (Cells{{4, 5}}));
  EXPECT_EQ(f.s().shot_timer, 0);
  f.Act(kFire);  // the sixth step fires again
  EXPECT_EQ(CellsOf(f.s().friendly_bullets), (Cells{{3, 5}, {8, 5}}));
}

TEST(SpaceInvadersTest, ShootingAnAlienGivesOneAndRemovesAlienAndBullet) {
  Fixture f;
  f.s().aliens = Board({{4, 5}, {4, 6}, {0, 0}});
  f.s().friendly_bullets = Board({{5, 5}});
  const Outcome o = f.Act(kNoop);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{0, 0}, {4, 6}}));
  EXPECT_TRUE(CellsOf(f.s().friendly_bullets).empty());
}

TEST(SpaceInvadersTest, BulletAndDescendingAlienSwapCellsWithoutAHit) {
  // The bullet rises into row 4 while the alien descends into row 5: the
  // reference tests for hits only after both moved.
  Fixture f;
  f.s().aliens = Board({{4, 0}, {0, 3}});
  f.s().friendly_bullets = Board({{5, 0}});
  f.s().alien_move_timer = 0;
  const Outcome o = f.Act(kNoop);
  EXPECT_EQ(o.reward, 0.0f);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 3}, {5, 0}}));
  EXPECT_EQ(CellsOf(f.s().friendly_bullets), (Cells{{4, 0}}));
}

TEST(SpaceInvadersTest, FormationMovesSidewaysWhenItsTimerRunsOut) {
  Fixture f;
  f.s().aliens = Board({{1, 3}, {1, 4}, {2, 5}});
  f.s().alien_move_timer = 1;
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(f.s().alien_move_timer, 0);
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 2}, {1, 3}, {2, 4}}));
  // Restarts at min(aliens left, enemy_move_interval), then counts this step.
  EXPECT_EQ(f.s().alien_move_timer, 2);
  f.s().alien_dir = 1;
  f.s().alien_move_timer = 0;
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 3}, {1, 4}, {2, 5}}));
}

TEST(SpaceInvadersTest, FormationDescendsAndReversesAtEitherEdge) {
  Fixture f;
  f.s().aliens = Board({{1, 0}, {1, 3}});
  f.s().alien_move_timer = 0;
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{2, 0}, {2, 3}}));
  EXPECT_EQ(f.s().alien_dir, 1);
  f.s().alien_move_timer = 0;
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{2, 1}, {2, 4}}));

  f.s().aliens = Board({{3, 9}});
  f.s().alien_move_timer = 0;
  f.Act(kNoop);
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{4, 9}}));
  EXPECT_EQ(f.s().alien_dir, -1);
  EXPECT_FALSE(f.s().terminal);
}

TEST(SpaceInvadersTest, FewerAliensMoveMoreOften) {
  Fixture f;
  f.s().aliens = Board({{1, 5}});
  f.s().alien_move_timer = 0;
  for (int i = 0; i < 3; ++i) f.Act(kNoop);  // one alien: a column per step
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 2}}));

  f.s().aliens = Board({{1, 5}, {1, 6}});
  f.s().alien_move_timer = 0;
  for (int i = 0; i < 4; ++i) f.Act(kNoop);  // two aliens: every second step
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{1, 3}, {1, 4}}));
}

TEST(SpaceInvadersTest, DescendingWithAnAlienOnTheBottomRowTerminates) {
  Fixture f;
  f.s().aliens = Board({{9, 0}});
  f.s().alien_move_timer = 0;
  const Outcome o = f.Act(kNoop);
  EXPECT_TRUE(o.terminal);
  // np.roll wraps the bottom row to the top in the final state.
  EXPECT_EQ(CellsOf(f.s().aliens), (Cells{{0, 0}}));
}

TEST(SpaceInvadersTest, AlienReachingTheCannonTerminates) {
  Fixture f;
  f.s().aliens = Board({{8, 5}, {0, 0}});
  f.s().alien_move_timer = 0;
  EXPECT_TRUE(f.Act(kNoop).terminal);

  Fixture g;  // sideways along the bottom row into the cannon
  g.s().aliens = Board({{9, 7}});
  g.s().alien_move_timer = 0;
  EXPECT_FALSE(g.Act(kNoop).terminal);
  g.s().alien_move_timer = 0;
  EXPECT_TRUE(g.Act(kNoop).terminal);
}

TEST(SpaceInvadersTest, EnemyBulletFallsAndTerminatesOnlyOnTheCannon) {
  Fixture f;
  f.s().aliens = Board({{0, 0}});
  f.s().enemy_bullets = Board({{7, 4}, {8, 3}});
  Outcome o = f.Act(kNoop);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(CellsOf(f.s().enemy_bullets), (Cells{{8, 4}, {9, 3}}));
  o = f.Act(kLeft);  // into the bullet's column as it lands
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(CellsOf(f.s().enemy_bullets), (Cells{{9, 4}}));

  Fixture g;
  g.s().aliens = Board({{0, 0}});
  g.s().enemy_bullets = Board({{9, 3}});
  EXPECT_FALSE(g.Act(kNoop).terminal);
  EXPECT_TRUE(CellsOf(g.s().enemy_bullets).empty());  // gone past the bottom
}

TEST(SpaceInvadersTest, LowestAlienOfTheNearestColumnShootsLeftWinsTies) {
  Fixture f;
  f.s().aliens = Board({{1, 3}, {4, 3}, {6, 7}});
  f.s().alien_shot_timer = 0;
  f.Act(kNoop);  // columns 3 and 7 are both 2 from the cannon at 5
  EXPECT_EQ(CellsOf(f.s().enemy_bullets), (Cells{{4, 3}}));
  EXPECT_EQ(f.s().alien_shot_timer, 9);
  f.s().enemy_bullets = {};
  f.s().alien_shot_timer = 0;
  f.Act(kRight);  // the cannon is at 6 now: column 7 is nearest
  EXPECT_EQ(CellsOf(f.s().enemy_bullets), (Cells{{6, 7}}));
}

TEST(SpaceInvadersTest, ClearingTheWaveRespawnsTheFormationFaster) {
  Fixture f;
  f.s().aliens = Board({{3, 5}});
  f.s().friendly_bullets = Board({{4, 5}});
  f.s().alien_move_timer = 7;
  const Outcome o = f.Act(kNoop);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_EQ(CellsOf(f.s().aliens).size(), 24u);
  EXPECT_EQ(f.s().aliens[0], 0b0011111100);
  EXPECT_EQ(f.s().aliens[4], 0);
  EXPECT_EQ(f.s().enemy_move_interval, 11);
  EXPECT_EQ(f.s().ramp_index, 1);
  EXPECT_EQ(f.s().alien_move_timer, 6);  // the timer runs on unchanged

  f.s().enemy_move_interval = 6;  // the fastest wave
  f.s().aliens = Board({{3, 5}});
  f.s().friendly_bullets = Board({{4, 5}});
  f.Act(kNoop);
  EXPECT_EQ(f.s().enemy_move_interval, 6);
  EXPECT_EQ(f.s().ramp_index, 1);
}

TEST(SpaceInvadersTest, WithoutRampingEveryWaveHasTheSameSpeed) {
  Fixture f(/*ramping=*/false);
  f.s().aliens = Board({{3, 5}});
  f.s().friendly_bullets = Board({{4, 5}});
  EXPECT_EQ(f.Act(kNoop).reward, 1.0f);
  EXPECT_EQ(CellsOf(f.s().aliens).size(), 24u);
  EXPECT_EQ(f.s().enemy_move_interval, 12);
  EXPECT_EQ(f.s().ramp_index, 0);
}

TEST(SpaceInvadersTest, TerminalGameIgnoresActions) {
  Fixture f;
  f.s().terminal = true;
  const SpaceInvaders::State before = f.s();
  const Outcome o = f.Act(kFire);
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(o.reward, 0.0f);
  EXPECT_EQ(f.s().friendly_bullets, before.friendly_bullets);
  EXPECT_EQ(f.s().shot_timer, before.shot_timer);
}

TEST(SpaceInvadersTest, ObservationChannelsFollowTheState) {
  Fixture f;
  f.s().pos = 2;
  f.s().aliens = Board({{1, 4}, {3, 8}});
  f.s().friendly_bullets = Board({{6, 2}});
  f.s().enemy_bullets = Board({{7, 9}});
  auto grid = Observe(f.game);
  int ones = 0;
  for (std::uint8_t v : grid) ones += v;
  EXPECT_EQ(ones, 1 + 2 + 2 + 1 + 1);
  EXPECT_TRUE(At(grid, 9, 2, SpaceInvaders::kCannonChannel));
  for (auto [y, x] : Cells{{1, 4}, {3, 8}}) {
    EXPECT_TRUE(At(grid, y, x, SpaceInvaders::kAlienChannel));
    EXPECT_TRUE(At(grid, y, x, SpaceInvaders::kAlienLeftChannel));
  }
  EXPECT_TRUE(At(grid, 6, 2, SpaceInvaders::kFriendlyBulletChannel));
  EXPECT_TRUE(At(grid, 7, 9, SpaceInvaders::kEnemyBulletChannel));

  f.s().alien_dir = 1;
  grid = Observe(f.game);
  EXPECT_TRUE(At(grid, 1, 4, SpaceInvaders::kAlienRightChannel));
  EXPECT_FALSE(At(grid, 1, 4, SpaceInvaders::kAlienLeftChannel));
}

// Through the Env adapter.

// Observations of `steps` steps from Reset(seed), resetting after each
// episode; actions are fixed_action, or uniform from a policy generator that
// does not depend on `seed`.
std::vector<std::vector<std::byte>> Play(std::uint64_t seed, double sticky, int steps,
                                         int fixed_action = -1) {
  MinAtarOptions options;
  options.sticky_action_prob = sticky;
  MinAtarEnv<SpaceInvaders> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  std::vector<std::vector<std::byte>> trajectory;
  env.Reset(seed, obs);
  trajectory.push_back(obs);
  Rng policy(1000);
  for (int i = 0; i < steps; ++i) {
    const int action = fixed_action >= 0 ? fixed_action : static_cast<int>(policy.Below(6));
    const StepResult r = env.Step(action, obs);
    trajectory.push_back(obs);
    if (r.terminated) env.Reset(std::nullopt, obs);
  }
  return trajectory;
}

TEST(SpaceInvadersEnvTest, SameSeedGivesTheSameTrajectory) {
  EXPECT_EQ(Play(7, 0.1, 500), Play(7, 0.1, 500));
  // Sticky actions draw from the seeded generator: another seed, another play.
  EXPECT_NE(Play(7, 0.5, 500), Play(8, 0.5, 500));
}

bool ObsAt(const std::vector<std::byte>& obs, int y, int x, int c) {
  return obs[(y * kGridSize + x) * kC + c] != std::byte{0};
}

TEST(SpaceInvadersEnvTest, WithStickyProbabilityOneTheActionNeverTakesEffect) {
  // The first step repeats the no-op that Reset starts from, and so on.
  for (const auto& obs : Play(3, 1.0, 50, kRight)) EXPECT_TRUE(ObsAt(obs, 9, 5, 0));
  for (const auto& obs : Play(3, 1.0, 50, kFire)) {
    for (int y = 0; y < kGridSize; ++y) {
      for (int x = 0; x < kGridSize; ++x) {
        EXPECT_FALSE(ObsAt(obs, y, x, SpaceInvaders::kFriendlyBulletChannel));
      }
    }
  }
  // Control: without stickiness the same actions move and fire.
  EXPECT_TRUE(ObsAt(Play(3, 0.0, 1, kRight)[1], 9, 6, 0));
  EXPECT_TRUE(ObsAt(Play(3, 0.0, 1, kFire)[1], 8, 5, SpaceInvaders::kFriendlyBulletChannel));
}

}  // namespace
}  // namespace rlswarm::envs::minatar
