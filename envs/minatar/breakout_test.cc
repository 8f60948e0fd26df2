#include "envs/minatar/breakout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"
#include "envs/minatar/observed_grid.h"

namespace rlswarm::envs::minatar {
namespace {

constexpr int kC = Breakout::kChannels;
using Grid = GridOf<kC>;

int CountBricks(const Breakout::State& s) {
  int n = 0;
  for (const auto& row : s.bricks) {
    for (bool b : row) n += b;
  }
  return n;
}

// A game after Reset, with no bricks unless a test adds them.
Breakout EmptyBoard() {
  Breakout game(true);
  Rng rng(1);
  game.Reset(rng);
  game.mutable_state().bricks = {};
  return game;
}

void PlaceBall(Breakout& game, int x, int y, int dir) {
  Breakout::State& s = game.mutable_state();
  s.ball_x = s.last_x = x;
  s.ball_y = s.last_y = y;
  s.ball_dir = dir;
}

TEST(BreakoutTest, ResetStartsBallAtEitherWallAndFillsRowsOneToThree) {
  bool seen_left = false;
  bool seen_right = false;
  for (std::uint64_t seed = 0; seed < 64; ++seed) {
    Breakout game(true);
    Rng rng(seed);
    game.Reset(rng);
    const Breakout::State& s = game.state();
    EXPECT_EQ(s.ball_y, 3);
    if (s.ball_x == 0) {
      EXPECT_EQ(s.ball_dir, Breakout::kDownRight);
      seen_left = true;
    } else {
      EXPECT_EQ(s.ball_x, 9);
      EXPECT_EQ(s.ball_dir, Breakout::kDownLeft);
      seen_right = true;
    }
    EXPECT_EQ(s.last_x, s.ball_x);
    EXPECT_EQ(s.last_y, s.ball_y);
    EXPECT_EQ(s.paddle_x, 4);
    EXPECT_FALSE(s.strike);
    EXPECT_FALSE(s.terminal);
    for (int y = 0; y < kGridSize; ++y) {
      for (int x = 0; x < kGridSize; ++x) EXPECT_EQ(s.bricks[y][x], y >= 1 && y <= 3);
    }
  }
  EXPECT_TRUE(seen_left);
  EXPECT_TRUE(seen_right);
}

TEST(BreakoutTest, PaddleMovesOneCellAndStopsAtTheWalls) {
  Breakout game = EmptyBoard();
  Rng rng(2);
  PlaceBall(game, 5, 1, Breakout::kUpRight);  // bounces around the top, far from the paddle
  game.Act(kRight, rng);
  EXPECT_EQ(game.state().paddle_x, 5);
  game.Act(kUp, rng);  // no effect in Breakout
  game.Act(kFire, rng);
  EXPECT_EQ(game.state().paddle_x, 5);
  game.mutable_state().paddle_x = 0;
  game.Act(kLeft, rng);
  EXPECT_EQ(game.state().paddle_x, 0);
  game.mutable_state().paddle_x = 9;
  game.Act(kRight, rng);
  EXPECT_EQ(game.state().paddle_x, 9);
  game.Act(kLeft, rng);
  EXPECT_EQ(game.state().paddle_x, 8);
}

TEST(BreakoutTest, BallMovesDiagonallyAndLeavesATrail) {
  Breakout game = EmptyBoard();
  Rng rng(3);
  PlaceBall(game, 4, 5, Breakout::kDownLeft);
  game.Act(kNoop, rng);
  const Breakout::State& s = game.state();
  EXPECT_EQ(s.ball_x, 3);
  EXPECT_EQ(s.ball_y, 6);
  EXPECT_EQ(s.last_x, 4);
  EXPECT_EQ(s.last_y, 5);
  EXPECT_EQ(s.ball_dir, Breakout::kDownLeft);
}

TEST(BreakoutTest, SideWallReflectsXAndTheBallOnlyMovesVertically) {
  Breakout game = EmptyBoard();
  Rng rng(4);
  PlaceBall(game, 9, 5, Breakout::kUpRight);
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().ball_x, 9);
  EXPECT_EQ(game.state().ball_y, 4);
  EXPECT_EQ(game.state().ball_dir, Breakout::kUpLeft);

  PlaceBall(game, 0, 5, Breakout::kDownLeft);
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().ball_x, 0);
  EXPECT_EQ(game.state().ball_y, 6);
  EXPECT_EQ(game.state().ball_dir, Breakout::kDownRight);
}

TEST(BreakoutTest, CeilingReflectsY) {
  Breakout game = EmptyBoard();
  Rng rng(5);
  PlaceBall(game, 5, 0, Breakout::kUpRight);
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().ball_x, 6);
  EXPECT_EQ(game.state().ball_y, 0);
  EXPECT_EQ(game.state().ball_dir, Breakout::kDownRight);
}

TEST(BreakoutTest, CornerReflectsBothAxes) {
  Breakout game = EmptyBoard();
  Rng rng(6);
  PlaceBall(game, 9, 0, Breakout::kUpRight);
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().ball_x, 9);
  EXPECT_EQ(game.state().ball_y, 0);
  EXPECT_EQ(game.state().ball_dir, Breakout::kDownLeft);
}

TEST(BreakoutTest, BrickHitScoresRemovesTheBrickAndReflects) {
  Breakout game = EmptyBoard();
  Rng rng(7);
  game.mutable_state().bricks[4][4] = true;
  game.mutable_state().bricks[0][0] = true;  // keeps the board non-empty
  PlaceBall(game, 5, 5, Breakout::kUpLeft);
  const Outcome o = game.Act(kNoop, rng);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(o.terminal);
  const Breakout::State& s = game.state();
  EXPECT_FALSE(s.bricks[4][4]);
  EXPECT_EQ(CountBricks(s), 1);
  EXPECT_EQ(s.ball_x, 4);  // x advances, y stays
  EXPECT_EQ(s.ball_y, 5);
  EXPECT_EQ(s.ball_dir, Breakout::kDownLeft);
  EXPECT_TRUE(s.strike);
  // The next step sees no brick: the strike flag clears.
  EXPECT_EQ(game.Act(kNoop, rng).reward, 0.0f);
  EXPECT_FALSE(game.state().strike);
}

TEST(BreakoutTest, WallIsResolvedBeforeTheBrick) {
  Breakout game = EmptyBoard();
  Rng rng(8);
  game.mutable_state().bricks[3][9] = true;
  PlaceBall(game, 9, 4, Breakout::kUpRight);
  EXPECT_EQ(game.Act(kNoop, rng).reward, 1.0f);
  EXPECT_FALSE(game.state().bricks[3][9]);
  EXPECT_EQ(game.state().ball_x, 9);
  EXPECT_EQ(game.state().ball_y, 4);
  EXPECT_EQ(game.state().ball_dir, Breakout::kDownLeft);
}

TEST(BreakoutTest, BrickRightAfterAStrikePassesThroughUnscored) {
  Breakout game = EmptyBoard();
  Rng rng(9);
  game.mutable_state().bricks[4][4] = true;
  PlaceBall(game, 5, 5, Breakout::kUpLeft);
  game.mutable_state().strike = true;
  const Outcome o = game.Act(kNoop, rng);
  EXPECT_EQ(o.reward, 0.0f);
  const Breakout::State& s = game.state();
  EXPECT_TRUE(s.bricks[4][4]);
  EXPECT_EQ(s.ball_x, 4);  // the ball enters the brick's cell
  EXPECT_EQ(s.ball_y, 4);
  EXPECT_EQ(s.ball_dir, Breakout::kUpLeft);
  EXPECT_TRUE(s.strike);  // still touching a brick
}

TEST(BreakoutTest, BallOverThePaddleBouncesStraightBack) {
  Breakout game = EmptyBoard();
  game.mutable_state().bricks[1][0] = true;
  Rng rng(10);
  PlaceBall(game, 3, 8, Breakout::kDownRight);
  game.mutable_state().paddle_x = 3;
  const Outcome o = game.Act(kNoop, rng);
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(game.state().ball_x, 4);
  EXPECT_EQ(game.state().ball_y, 8);
  EXPECT_EQ(game.state().ball_dir, Breakout::kUpRight);
}

TEST(BreakoutTest, BallLandingOnThePaddleGoesBackTheWayItCame) {
  Breakout game = EmptyBoard();
  game.mutable_state().bricks[1][0] = true;
  Rng rng(11);
  PlaceBall(game, 3, 8, Breakout::kDownRight);
  game.mutable_state().paddle_x = 3;
  const Outcome o = game.Act(kRight, rng);  // the paddle moves first, to x = 4
  EXPECT_FALSE(o.terminal);
  EXPECT_EQ(game.state().ball_x, 4);
  EXPECT_EQ(game.state().ball_y, 8);
  EXPECT_EQ(game.state().ball_dir, Breakout::kUpLeft);
}

TEST(BreakoutTest, MissedBallTerminatesAndLaterActsDoNothing) {
  Breakout game = EmptyBoard();
  game.mutable_state().bricks[1][0] = true;
  Rng rng(12);
  PlaceBall(game, 3, 8, Breakout::kDownRight);
  game.mutable_state().paddle_x = 6;
  Outcome o = game.Act(kNoop, rng);
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(o.reward, 0.0f);
  EXPECT_EQ(game.state().ball_x, 4);
  EXPECT_EQ(game.state().ball_y, 9);
  o = game.Act(kLeft, rng);
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(game.state().paddle_x, 6);
  EXPECT_EQ(game.state().ball_y, 9);
}

TEST(BreakoutTest, ClearedBoardRefillsWhenTheBallReachesThePaddleRow) {
  Breakout game = EmptyBoard();
  Rng rng(13);
  PlaceBall(game, 3, 7, Breakout::kDownRight);
  game.Act(kNoop, rng);  // to row 8: no refill yet
  EXPECT_EQ(CountBricks(game.state()), 0);
  game.mutable_state().paddle_x = 4;
  game.Act(kNoop, rng);  // reaches row 9 over the paddle
  EXPECT_EQ(CountBricks(game.state()), 30);
  for (int y = 1; y <= 3; ++y) {
    for (int x = 0; x < kGridSize; ++x) EXPECT_TRUE(game.state().bricks[y][x]);
  }
  // Refilling happens even when the ball is then missed.
  Breakout lost = EmptyBoard();
  PlaceBall(lost, 3, 8, Breakout::kDownRight);
  lost.mutable_state().paddle_x = 8;
  EXPECT_TRUE(lost.Act(kNoop, rng).terminal);
  EXPECT_EQ(CountBricks(lost.state()), 30);
}

TEST(BreakoutTest, BoardIsNotRefilledWhileABrickRemains) {
  Breakout game = EmptyBoard();
  Rng rng(14);
  game.mutable_state().bricks[2][7] = true;
  PlaceBall(game, 3, 8, Breakout::kDownRight);
  game.mutable_state().paddle_x = 4;
  game.Act(kNoop, rng);
  EXPECT_EQ(CountBricks(game.state()), 1);
}

TEST(BreakoutTest, ObservationMarksPaddleBallTrailAndBricks) {
  Breakout game = EmptyBoard();
  Breakout::State& s = game.mutable_state();
  s.ball_x = 2;
  s.ball_y = 6;
  s.last_x = 1;
  s.last_y = 5;
  s.paddle_x = 7;
  s.bricks[1][3] = true;
  s.bricks[3][9] = true;
  const Grid grid = Observe(game);
  int ones = 0;
  for (std::uint8_t v : grid) ones += v;
  EXPECT_EQ(ones, 5);
  EXPECT_TRUE(At(grid, 9, 7, Breakout::kPaddleChannel));
  EXPECT_TRUE(At(grid, 6, 2, Breakout::kBallChannel));
  EXPECT_TRUE(At(grid, 5, 1, Breakout::kTrailChannel));
  EXPECT_TRUE(At(grid, 1, 3, Breakout::kBrickChannel));
  EXPECT_TRUE(At(grid, 3, 9, Breakout::kBrickChannel));
}

// --- Through MinAtarEnv -------------------------------------------------------

int PaddleX(const std::vector<std::byte>& obs) {
  for (int x = 0; x < kGridSize; ++x) {
    if (obs[((kGridSize - 1) * kGridSize + x) * kC + Breakout::kPaddleChannel] != std::byte{0}) {
      return x;
    }
  }
  ADD_FAILURE() << "no paddle in the observation";
  return -1;
}

TEST(BreakoutEnvTest, MinimalActionSetMapsToNoopLeftRight) {
  MinAtarOptions options;
  options.sticky_action_prob = 0.0;
  options.minimal_action_set = true;
  MinAtarEnv<Breakout> env(options);
  EXPECT_EQ(env.spec().action.num_actions, 3);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(1, obs);
  env.Step(2, obs);
  EXPECT_EQ(PaddleX(obs), 5);
  env.Step(1, obs);
  EXPECT_EQ(PaddleX(obs), 4);
  env.Step(0, obs);
  EXPECT_EQ(PaddleX(obs), 4);
}

TEST(BreakoutEnvTest, StickyProbabilityOneKeepsTheInitialNoop) {
  MinAtarOptions options;
  options.sticky_action_prob = 1.0;
  MinAtarEnv<Breakout> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(3, obs);
  for (int t = 0; t < 200; ++t) {
    const StepResult r = env.Step(t % 2 ? kLeft : kRight, obs);
    ASSERT_EQ(PaddleX(obs), 4) << t;
    if (r.terminated) env.Reset(std::nullopt, obs);
  }
}

// Where the paddle ends up from `x` under an action of the full set.
int PaddleAfter(int action, int x) {
  if (action == kLeft) return std::max(0, x - 1);
  if (action == kRight) return std::min(kGridSize - 1, x + 1);
  return x;
}

TEST(BreakoutEnvTest, StickyActionsRepeatAtTheGivenRate) {
  // Each step asks for an action whose effect on the paddle differs from the
  // action that took effect on the previous step, so the paddle shows whether
  // the previous action was repeated.
  MinAtarOptions options;
  options.sticky_action_prob = 0.1;
  MinAtarEnv<Breakout> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(11, obs);
  Rng chooser(5);
  int last = kNoop;  // the env restarts last_action at no-op on Reset
  int repeats = 0;
  constexpr int kSteps = 20000;
  for (int t = 0; t < kSteps; ++t) {
    const int x = PaddleX(obs);
    int request;
    do {
      request = std::array{kNoop, kLeft, kRight}[chooser.Below(3)];
    } while (PaddleAfter(request, x) == PaddleAfter(last, x));
    const StepResult r = env.Step(request, obs);
    const int new_x = PaddleX(obs);
    if (new_x == PaddleAfter(last, x)) {
      ++repeats;
    } else {
      ASSERT_EQ(new_x, PaddleAfter(request, x)) << t;
      last = request;
    }
    if (r.terminated) {
      env.Reset(std::nullopt, obs);
      last = kNoop;
    }
  }
  // Binomial(20000, 0.1): standard deviation 0.0021.
  EXPECT_NEAR(static_cast<double>(repeats) / kSteps, 0.1, 0.015);
}

}  // namespace
}  // namespace rlswarm::envs::minatar
