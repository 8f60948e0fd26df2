#include "envs/minatar/freeway.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"
#include "envs/minatar/observed_grid.h"

namespace rlswarm::envs::minatar {
namespace {

constexpr int kC = Freeway::kChannels;
using Grid = GridOf<kC>;

// A game after Reset whose cars all wait at x = 0 for a long time, so that a
// test moves only what it sets up.
Freeway ParkedCars() {
  Freeway game(true);
  Rng rng(1);
  game.Reset(rng);
  for (Freeway::Car& car : game.mutable_state().cars) {
    car.x = 0;
    car.timer = 100000;
    car.speed = 1;
  }
  return game;
}

TEST(FreewayTest, ResetPutsChickenAtTheBottomAndCarsAtTheLeftEdge) {
  Freeway game(true);
  Rng rng(2);
  game.Reset(rng);
  const Freeway::State& s = game.state();
  EXPECT_EQ(s.chicken_y, 9);
  EXPECT_EQ(s.move_timer, 3);
  EXPECT_EQ(s.terminate_timer, 2500);
  EXPECT_FALSE(s.terminal);
  for (int i = 0; i < Freeway::kNumCars; ++i) {
    const Freeway::Car& car = s.cars[i];
    EXPECT_EQ(car.x, 0);
    EXPECT_EQ(car.y, i + 1);
    EXPECT_GE(std::abs(car.speed), 1);
    EXPECT_LE(std::abs(car.speed), 5);
    EXPECT_EQ(car.timer, std::abs(car.speed));
  }
}

TEST(FreewayTest, CarSpeedsAndDirectionsAreUniform) {
  std::array<int, 11> counts{};  // speed + 5
  constexpr int kResets = 3000;
  Rng rng(3);
  Freeway game(true);
  for (int r = 0; r < kResets; ++r) {
    game.Reset(rng);
    for (const Freeway::Car& car : game.state().cars) ++counts[car.speed + 5];
  }
  EXPECT_EQ(counts[5], 0);  // never speed 0
  for (int v = -5; v <= 5; ++v) {
    if (v == 0) continue;
    // 24000 draws: standard deviation 0.0019 around 0.1.
    EXPECT_NEAR(counts[v + 5] / (8.0 * kResets), 0.1, 0.012) << "speed " << v;
  }
}

TEST(FreewayTest, ChickenMovesOnlyEveryThirdStep) {
  Freeway game = ParkedCars();
  Rng rng(4);
  // The move timer starts at 3: the first three steps cannot move.
  std::vector<int> ys;
  for (int t = 0; t < 10; ++t) {
    game.Act(kUp, rng);
    ys.push_back(game.state().chicken_y);
  }
  EXPECT_EQ(ys, (std::vector<int>{9, 9, 9, 8, 8, 8, 7, 7, 7, 6}));
  game.Act(kNoop, rng);
  game.Act(kNoop, rng);
  game.Act(kDown, rng);
  EXPECT_EQ(game.state().chicken_y, 7);
  // Down at the bottom still spends the move.
  game.mutable_state().chicken_y = 9;
  game.mutable_state().move_timer = 0;
  game.Act(kDown, rng);
  EXPECT_EQ(game.state().chicken_y, 9);
  EXPECT_EQ(game.state().move_timer, 2);
  game.Act(kLeft, rng);  // left, right and fire do nothing in Freeway
  game.Act(kRight, rng);
  game.Act(kFire, rng);
  EXPECT_EQ(game.state().chicken_y, 9);
  EXPECT_EQ(game.state().move_timer, 0);
}

TEST(FreewayTest, CrossingScoresResetsChickenAndRedrawsCarSpeeds) {
  Freeway game = ParkedCars();
  Rng rng(5);
  for (int i = 0; i < Freeway::kNumCars; ++i) {
    game.mutable_state().cars[i].x = i;
    game.mutable_state().cars[i].speed = 5;
  }
  game.mutable_state().chicken_y = 1;
  game.mutable_state().move_timer = 0;
  const Outcome o = game.Act(kUp, rng);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(o.terminal);
  const Freeway::State& s = game.state();
  EXPECT_EQ(s.chicken_y, 9);
  bool any_new_speed = false;
  for (int i = 0; i < Freeway::kNumCars; ++i) {
    const Freeway::Car& car = s.cars[i];
    EXPECT_EQ(car.x, i);  // positions are kept
    EXPECT_EQ(car.y, i + 1);
    // The timer restarts at |speed| and this step's car update counts it down.
    EXPECT_EQ(car.timer, std::abs(car.speed) - 1);
    any_new_speed |= car.speed != 5;
  }
  EXPECT_TRUE(any_new_speed);
}

TEST(FreewayTest, NoCrossingWhileTheMoveTimerRuns) {
  Freeway game = ParkedCars();
  Rng rng(6);
  game.mutable_state().chicken_y = 1;
  game.mutable_state().move_timer = 1;
  EXPECT_EQ(game.Act(kUp, rng).reward, 0.0f);
  EXPECT_EQ(game.state().chicken_y, 1);
  EXPECT_EQ(game.Act(kUp, rng).reward, 1.0f);
}

TEST(FreewayTest, CarInTheChickensCellSendsItBack) {
  Freeway game = ParkedCars();
  Rng rng(7);
  game.mutable_state().chicken_y = 5;
  game.mutable_state().cars[4].x = 4;  // the car of row 5, not moving
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().chicken_y, 9);
}

TEST(FreewayTest, ChickenMovingIntoACarIsSentBack) {
  Freeway game = ParkedCars();
  Rng rng(8);
  game.mutable_state().chicken_y = 6;
  game.mutable_state().move_timer = 0;
  game.mutable_state().cars[4].x = 4;
  game.Act(kUp, rng);
  EXPECT_EQ(game.state().chicken_y, 9);
}

TEST(FreewayTest, CarMovingOntoTheChickenSendsItBack) {
  Freeway game = ParkedCars();
  Rng rng(9);
  game.mutable_state().chicken_y = 5;
  Freeway::Car& car = game.mutable_state().cars[4];
  car.x = 3;
  car.speed = 2;
  car.timer = 0;
  game.Act(kNoop, rng);
  EXPECT_EQ(game.state().chicken_y, 9);
  EXPECT_EQ(game.state().cars[4].x, 4);
  EXPECT_EQ(game.state().cars[4].timer, 2);
}

TEST(FreewayTest, CarOfSpeedVMovesEveryVPlusOneStepsAndWraps) {
  Freeway game = ParkedCars();
  Rng rng(10);
  Freeway::Car& left = game.mutable_state().cars[0];
  left.x = 0;
  left.speed = -1;
  left.timer = 0;
  Freeway::Car& right = game.mutable_state().cars[7];
  right.x = 9;
  right.speed = 3;
  right.timer = 0;
  std::vector<int> left_x;
  std::vector<int> right_x;
  for (int t = 0; t < 9; ++t) {
    game.Act(kNoop, rng);
    left_x.push_back(game.state().cars[0].x);
    right_x.push_back(game.state().cars[7].x);
  }
  EXPECT_EQ(left_x, (std::vector<int>{9, 9, 8, 8, 7, 7, 6, 6, 5}));
  EXPECT_EQ(right_x, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2}));
}

TEST(FreewayTest, EpisodeEndsOnStep2501) {
  // The reference's terminate_timer starts at 2500 and ends the episode when
  // it drops below 0.
  Freeway game(true);
  Rng rng(11);
  game.Reset(rng);
  for (int t = 1; t <= 2500; ++t) ASSERT_FALSE(game.Act(kNoop, rng).terminal) << t;
  const Outcome o = game.Act(kNoop, rng);
  EXPECT_TRUE(o.terminal);
  EXPECT_TRUE(game.Act(kUp, rng).terminal);
}

TEST(FreewayTest, ObservationMarksChickenCarsAndSpeedTrails) {
  Freeway game = ParkedCars();
  Freeway::State& s = game.mutable_state();
  s.chicken_y = 6;
  for (Freeway::Car& car : s.cars) {
    car.x = 5;
    car.speed = 1;
  }
  s.cars[0].x = 0;
  s.cars[0].speed = 2;  // trail wraps to x = 9, speed2 channel
  s.cars[1].x = 9;
  s.cars[1].speed = -5;  // trail wraps to x = 0, speed5 channel
  s.cars[2].speed = -3;  // trail at x = 6, speed3 channel
  const Grid grid = Observe(game);
  int ones = 0;
  for (std::uint8_t v : grid) ones += v;
  EXPECT_EQ(ones, 1 + 2 * Freeway::kNumCars);
  EXPECT_TRUE(At(grid, 6, 4, Freeway::kChickenChannel));
  EXPECT_TRUE(At(grid, 1, 0, Freeway::kCarChannel));
  EXPECT_TRUE(At(grid, 1, 9, Freeway::kSpeed1Channel + 1));
  EXPECT_TRUE(At(grid, 2, 9, Freeway::kCarChannel));
  EXPECT_TRUE(At(grid, 2, 0, Freeway::kSpeed1Channel + 4));
  EXPECT_TRUE(At(grid, 3, 5, Freeway::kCarChannel));
  EXPECT_TRUE(At(grid, 3, 6, Freeway::kSpeed1Channel + 2));
  for (int y = 4; y <= 8; ++y) {
    EXPECT_TRUE(At(grid, y, 5, Freeway::kCarChannel));
    EXPECT_TRUE(At(grid, y, 4, Freeway::kSpeed1Channel));
  }
}

// --- Through MinAtarEnv -------------------------------------------------------

int ChickenY(const std::vector<std::byte>& obs) {
  for (int y = 0; y < kGridSize; ++y) {
    if (obs[(y * kGridSize + Freeway::kChickenX) * kC + Freeway::kChickenChannel] != std::byte{0}) {
      return y;
    }
  }
  ADD_FAILURE() << "no chicken in the observation";
  return -1;
}

TEST(FreewayEnvTest, StickyProbabilityOneKeepsTheInitialNoop) {
  MinAtarOptions options;
  options.sticky_action_prob = 1.0;
  MinAtarEnv<Freeway> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(3, obs);
  for (int t = 0; t < 100; ++t) {
    env.Step(kUp, obs);
    ASSERT_EQ(ChickenY(obs), 9) << t;
  }
}

TEST(FreewayEnvTest, MinimalActionSetMapsToNoopUpDown) {
  MinAtarOptions options;
  options.sticky_action_prob = 0.0;
  options.minimal_action_set = true;
  MinAtarEnv<Freeway> env(options);
  EXPECT_EQ(env.spec().action.num_actions, 3);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(1, obs);
  for (int t = 0; t < 4; ++t) env.Step(1, obs);  // up; the 4th step moves
  EXPECT_EQ(ChickenY(obs), 8);
}

}  // namespace
}  // namespace rlswarm::envs::minatar
