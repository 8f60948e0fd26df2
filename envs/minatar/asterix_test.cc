#include "envs/minatar/asterix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/random.h"
#include "envs/minatar/minatar_env.h"
#include "envs/minatar/observed_grid.h"

namespace rlswarm::envs::minatar {
namespace {

constexpr int kC = Asterix::kChannels;
using Grid = GridOf<kC>;
using Entity = Asterix::Entity;

int CountEntities(const Asterix::State& s) {
  return static_cast<int>(std::count_if(s.entities.begin(), s.entities.end(),
                                        [](const auto& e) { return e.has_value(); }));
}

// A game after Reset whose timers will not spawn or move anything for a while.
Asterix Quiet(bool ramping = true) {
  Asterix game(ramping);
  Rng rng(1);
  game.Reset(rng);
  game.mutable_state().spawn_timer = 1000;
  game.mutable_state().move_timer = 1000;
  return game;
}

TEST(AsterixTest, ResetStartsInTheMiddleWithNoEntities) {
  Asterix game(true);
  Rng rng(2);
  game.Reset(rng);
  const Asterix::State& s = game.state();
  EXPECT_EQ(s.player_x, 5);
  EXPECT_EQ(s.player_y, 5);
  EXPECT_EQ(CountEntities(s), 0);
  EXPECT_EQ(s.spawn_speed, 10);
  EXPECT_EQ(s.spawn_timer, 10);
  EXPECT_EQ(s.move_speed, 5);
  EXPECT_EQ(s.move_timer, 5);
  EXPECT_EQ(s.ramp_timer, 100);
  EXPECT_EQ(s.ramp_index, 0);
  EXPECT_FALSE(s.terminal);
}

TEST(AsterixTest, PlayerMovesWithinColumnsZeroToNineAndRowsOneToEight) {
  Asterix game = Quiet();
  Rng rng(3);
  game.Act(kLeft, rng);
  EXPECT_EQ(game.state().player_x, 4);
  game.Act(kUp, rng);
  EXPECT_EQ(game.state().player_y, 4);
  game.Act(kRight, rng);
  game.Act(kRight, rng);
  EXPECT_EQ(game.state().player_x, 6);
  game.Act(kDown, rng);
  EXPECT_EQ(game.state().player_y, 5);
  game.Act(kFire, rng);  // no effect in Asterix
  EXPECT_EQ(game.state().player_x, 6);
  EXPECT_EQ(game.state().player_y, 5);
  for (int t = 0; t < 12; ++t) game.Act(kUp, rng);
  EXPECT_EQ(game.state().player_y, 1);
  for (int t = 0; t < 12; ++t) game.Act(kDown, rng);
  EXPECT_EQ(game.state().player_y, 8);
  for (int t = 0; t < 12; ++t) game.Act(kLeft, rng);
  EXPECT_EQ(game.state().player_x, 0);
  for (int t = 0; t < 12; ++t) game.Act(kRight, rng);
  EXPECT_EQ(game.state().player_x, 9);
}

TEST(AsterixTest, FirstEntitySpawnsOnStepElevenAtAnEdge) {
  Asterix game(true);
  Rng rng(4);
  game.Reset(rng);
  for (int t = 1; t <= 10; ++t) {
    game.Act(kNoop, rng);
    ASSERT_EQ(CountEntities(game.state()), 0) << t;
  }
  game.Act(kNoop, rng);
  ASSERT_EQ(CountEntities(game.state()), 1);
  EXPECT_EQ(game.state().spawn_timer, 9);
  for (const auto& e : game.state().entities) {
    if (!e) continue;
    // Spawned at an edge, then moved in the same step (the move timer also
    // reaches 0 on step 11).
    EXPECT_EQ(e->x, e->moving_right ? 1 : 8);
  }
}

TEST(AsterixTest, SpawnDrawsTheReferencesCoinsThenAFreeSlot) {
  // Full board: the two coins are drawn and nothing spawns.
  Asterix game = Quiet();
  for (auto& e : game.mutable_state().entities) e = Entity{2, true, false};
  game.mutable_state().player_y = 8;
  game.mutable_state().player_x = 9;
  game.mutable_state().spawn_timer = 0;
  Rng rng(5);
  Rng expected = rng;
  game.Act(kNoop, rng);
  expected.Uniform01();
  expected.Uniform01();
  EXPECT_EQ(rng.NextU64(), expected.NextU64());
  EXPECT_EQ(game.state().spawn_timer, 9);

  // One free slot: it is filled, after the coins and one slot draw.
  game.mutable_state().entities[3].reset();
  game.mutable_state().spawn_timer = 0;
  expected = rng;
  game.Act(kNoop, rng);
  const bool moving_right = expected.Uniform01() < 0.5;
  const bool gold = expected.Uniform01() < 1.0 / 3.0;
  EXPECT_EQ(expected.Below(1), 0u);
  EXPECT_EQ(rng.NextU64(), expected.NextU64());
  ASSERT_TRUE(game.state().entities[3].has_value());
  EXPECT_EQ(game.state().entities[3]->moving_right, moving_right);
  EXPECT_EQ(game.state().entities[3]->gold, gold);
  EXPECT_EQ(game.state().entities[3]->x, moving_right ? 0 : 9);
}

TEST(AsterixTest, SpawnDirectionGoldAndSlotFollowTheReferenceDistributions) {
  Asterix game = Quiet();
  Rng rng(6);
  constexpr int kSpawns = 24000;
  int right = 0;
  int gold = 0;
  std::array<int, Asterix::kNumSlots> slots{};
  for (int n = 0; n < kSpawns; ++n) {
    Asterix::State& s = game.mutable_state();
    s.entities = {};
    s.entities[0] = Entity{5, true, false};  // slot 0 taken: never drawn
    s.player_y = 1;
    s.player_x = 4;
    s.spawn_timer = 0;
    game.Act(kNoop, rng);
    for (int i = 1; i < Asterix::kNumSlots; ++i) {
      if (!s.entities[i]) continue;
      ++slots[i];
      right += s.entities[i]->moving_right;
      gold += s.entities[i]->gold;
    }
  }
  // Standard deviations: 0.0032, 0.0030, 0.0023.
  EXPECT_NEAR(right / double{kSpawns}, 0.5, 0.02);
  EXPECT_NEAR(gold / double{kSpawns}, 1.0 / 3.0, 0.02);
  EXPECT_EQ(slots[0], 0);
  for (int i = 1; i < Asterix::kNumSlots; ++i) {
    EXPECT_NEAR(slots[i] / double{kSpawns}, 1.0 / 7.0, 0.015) << i;
  }
}

TEST(AsterixTest, WalkingOntoGoldScoresAndRemovesIt) {
  Asterix game = Quiet();
  Rng rng(7);
  game.mutable_state().entities[4] = Entity{4, true, true};  // row 5
  const Outcome o = game.Act(kLeft, rng);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(o.terminal);
  EXPECT_FALSE(game.state().entities[4].has_value());
}

TEST(AsterixTest, GoldMovingOntoThePlayerScores) {
  Asterix game = Quiet();
  Rng rng(8);
  game.mutable_state().entities[4] = Entity{6, false, true};
  game.mutable_state().move_timer = 0;
  const Outcome o = game.Act(kNoop, rng);
  EXPECT_EQ(o.reward, 1.0f);
  EXPECT_FALSE(game.state().entities[4].has_value());
  EXPECT_EQ(game.state().move_timer, 4);  // restarted at move_speed, counted down
}

TEST(AsterixTest, WalkingOntoAnEnemyEndsTheEpisode) {
  Asterix game = Quiet();
  Rng rng(9);
  game.mutable_state().entities[3] = Entity{5, false, false};  // row 4
  const Outcome o = game.Act(kUp, rng);
  EXPECT_TRUE(o.terminal);
  EXPECT_EQ(o.reward, 0.0f);
  // A finished game ignores further actions.
  const Outcome after = game.Act(kDown, rng);
  EXPECT_TRUE(after.terminal);
  EXPECT_EQ(game.state().player_y, 4);
}

TEST(AsterixTest, EnemyMovingOntoThePlayerEndsTheEpisode) {
  Asterix game = Quiet();
  Rng rng(10);
  game.mutable_state().entities[4] = Entity{4, true, false};
  game.mutable_state().move_timer = 0;
  EXPECT_TRUE(game.Act(kNoop, rng).terminal);
  EXPECT_EQ(game.state().entities[4]->x, 5);
}

TEST(AsterixTest, EntitiesMoveEveryMoveSpeedStepsAndLeaveAtTheFarEdge) {
  Asterix game(true);
  Rng rng(12);
  game.Reset(rng);
  game.mutable_state().player_y = 8;  // out of reach of the spawn on step 11
  game.mutable_state().player_x = 5;
  game.mutable_state().entities[0] = Entity{7, true, false};  // row 1
  std::vector<int> xs;
  for (int t = 0; t < 16; ++t) {
    game.Act(kNoop, rng);
    const auto& e = game.state().entities[0];
    xs.push_back(e ? e->x : -1);
  }
  // The move timer starts at 5: moves on steps 6, 11 and 16.
  EXPECT_EQ(xs, (std::vector<int>{7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, -1}));
}

TEST(AsterixTest, RampingShortensSpawnAndMoveIntervals) {
  Asterix game(true);
  Rng rng(13);
  game.Reset(rng);
  auto step = [&] {
    game.Act(kNoop, rng);
    game.mutable_state().entities = {};  // keeps the player alive
  };
  for (int t = 1; t <= 101; ++t) step();
  EXPECT_EQ(game.state().spawn_speed, 10);
  EXPECT_EQ(game.state().ramp_timer, -1);
  step();  // step 102: the first ramp
  EXPECT_EQ(game.state().spawn_speed, 9);
  EXPECT_EQ(game.state().move_speed, 5);  // moves speed up on odd ramp_index only
  EXPECT_EQ(game.state().ramp_index, 1);
  EXPECT_EQ(game.state().ramp_timer, 100);
  for (int t = 0; t < 101; ++t) step();
  EXPECT_EQ(game.state().spawn_speed, 9);
  step();  // step 204: the second ramp
  EXPECT_EQ(game.state().spawn_speed, 8);
  EXPECT_EQ(game.state().move_speed, 4);
  EXPECT_EQ(game.state().ramp_index, 2);
  // Nine ramps bring both speeds to 1, and then the ramp stops.
  for (int t = 0; t < 7 * 102; ++t) step();
  EXPECT_EQ(game.state().spawn_speed, 1);
  EXPECT_EQ(game.state().move_speed, 1);
  EXPECT_EQ(game.state().ramp_index, 9);
  for (int t = 0; t < 500; ++t) step();
  EXPECT_EQ(game.state().ramp_index, 9);
  EXPECT_EQ(game.state().ramp_timer, 100);
}

TEST(AsterixTest, WithoutRampingSpeedsStayAtTheirInitialValues) {
  Asterix game(false);
  Rng rng(14);
  game.Reset(rng);
  int spawns = 0;
  for (int t = 0; t < 1000; ++t) {
    game.Act(kNoop, rng);
    spawns += CountEntities(game.state());
    game.mutable_state().entities = {};
  }
  EXPECT_EQ(game.state().spawn_speed, 10);
  EXPECT_EQ(game.state().move_speed, 5);
  EXPECT_EQ(game.state().ramp_index, 0);
  EXPECT_EQ(spawns, 99);  // steps 11, 21, ..., 991
}

TEST(AsterixTest, ObservationMarksPlayerEnemiesGoldAndTrails) {
  Asterix game = Quiet();
  Asterix::State& s = game.mutable_state();
  s.player_x = 2;
  s.player_y = 7;
  s.entities[0] = Entity{3, true, false};   // enemy, row 1, trail at x = 2
  s.entities[2] = Entity{6, false, true};   // gold, row 3, trail at x = 7
  s.entities[5] = Entity{0, true, true};    // row 6, trail off the grid
  s.entities[7] = Entity{9, false, false};  // row 8, trail off the grid
  const Grid grid = Observe(game);
  int ones = 0;
  for (std::uint8_t v : grid) ones += v;
  EXPECT_EQ(ones, 7);
  EXPECT_TRUE(At(grid, 7, 2, Asterix::kPlayerChannel));
  EXPECT_TRUE(At(grid, 1, 3, Asterix::kEnemyChannel));
  EXPECT_TRUE(At(grid, 1, 2, Asterix::kTrailChannel));
  EXPECT_TRUE(At(grid, 3, 6, Asterix::kGoldChannel));
  EXPECT_TRUE(At(grid, 3, 7, Asterix::kTrailChannel));
  EXPECT_TRUE(At(grid, 6, 0, Asterix::kGoldChannel));
  EXPECT_TRUE(At(grid, 8, 9, Asterix::kEnemyChannel));
}

// --- Through MinAtarEnv -------------------------------------------------------

struct Cell {
  int x;
  int y;
  bool operator==(const Cell&) const = default;
};

Cell PlayerCell(const std::vector<std::byte>& obs) {
  for (int y = 0; y < kGridSize; ++y) {
    for (int x = 0; x < kGridSize; ++x) {
      if (obs[(y * kGridSize + x) * kC + Asterix::kPlayerChannel] != std::byte{0}) return {x, y};
    }
  }
  ADD_FAILURE() << "no player in the observation";
  return {-1, -1};
}

Cell PlayerAfter(int action, Cell c) {
  switch (action) {
    case kLeft:
      return {std::max(0, c.x - 1), c.y};
    case kRight:
      return {std::min(9, c.x + 1), c.y};
    case kUp:
      return {c.x, std::max(1, c.y - 1)};
    case kDown:
      return {c.x, std::min(8, c.y + 1)};
    default:
      return c;
  }
}

TEST(AsterixEnvTest, StickyProbabilityOneKeepsTheInitialNoop) {
  MinAtarOptions options;
  options.sticky_action_prob = 1.0;
  MinAtarEnv<Asterix> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(3, obs);
  for (int t = 0; t < 300; ++t) {
    const StepResult r = env.Step(kLeft + t % 4, obs);
    ASSERT_EQ(PlayerCell(obs), (Cell{5, 5})) << t;
    if (r.terminated) env.Reset(std::nullopt, obs);
  }
}

TEST(AsterixEnvTest, StickyActionsRepeatAtTheGivenRate) {
  // Each step asks for an action whose effect on the player differs from the
  // action that took effect on the previous step, so the player's cell shows
  // whether the previous action was repeated.
  MinAtarOptions options;
  options.sticky_action_prob = 0.1;
  options.minimal_action_set = true;
  MinAtarEnv<Asterix> env(options);
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  env.Reset(11, obs);
  Rng chooser(5);
  int last = kNoop;  // the env restarts last_action at no-op on Reset
  int repeats = 0;
  constexpr int kSteps = 20000;
  for (int t = 0; t < kSteps; ++t) {
    const Cell c = PlayerCell(obs);
    int index;
    do {
      index = static_cast<int>(chooser.Below(Asterix::kMinimalActions.size()));
    } while (PlayerAfter(Asterix::kMinimalActions[index], c) == PlayerAfter(last, c));
    const int request = Asterix::kMinimalActions[index];
    const StepResult r = env.Step(index, obs);
    const Cell now = PlayerCell(obs);
    if (now == PlayerAfter(last, c)) {
      ++repeats;
    } else {
      ASSERT_EQ(now, PlayerAfter(request, c)) << t;
      last = request;
    }
    if (r.terminated) {
      env.Reset(std::nullopt, obs);
      last = kNoop;
    }
  }
  EXPECT_NEAR(static_cast<double>(repeats) / kSteps, 0.1, 0.015);
}

// End to end through MinAtarEnv, reading only the observation: a policy that
// walks to the nearest gold and keeps out of the enemies' way must score far
// above random. This guards what a learner depends on and no unit test above
// sees whole: the full action set's indices (l, u, r, d = 1..4), the channel
// meanings (player, enemy, trail = where an enemy came from, gold) and the
// reward. Measured with the same policy: ours ~11, the Python reference ~11,
// random play ~0.5.
TEST(AsterixTest, AnObservationOnlyScriptedPolicyScoresFarAboveRandom) {
  MinAtarEnv<Asterix> env(MinAtarOptions{});
  std::vector<std::byte> obs(env.spec().observation.NumBytes());
  const auto at = [&](int y, int x, int c) {
    return obs[static_cast<std::size_t>((y * kGridSize + x) * kC + c)] != std::byte{0};
  };
  constexpr int kEpisodes = 50;
  double total = 0;
  for (int episode = 0; episode < kEpisodes; ++episode) {
    env.Reset(1000 + episode, obs);
    for (int t = 0; t < 5000; ++t) {
      int py = 0, px = 0;
      for (int y = 0; y < kGridSize; ++y) {
        for (int x = 0; x < kGridSize; ++x) {
          if (at(y, x, 0)) py = y, px = x;
        }
      }
      // Cells an enemy holds or may reach next: two ahead in its direction
      // (its trail is behind it), one either way when the direction is unknown.
      std::array<std::array<bool, kGridSize>, kGridSize> danger{};
      for (int y = 0; y < kGridSize; ++y) {
        for (int x = 0; x < kGridSize; ++x) {
          if (!at(y, x, 1)) continue;
          const int dir = (x > 0 && at(y, x - 1, 2)) ? 1 : (x < 9 && at(y, x + 1, 2)) ? -1 : 0;
          for (int k = -2; k <= 2; ++k) {
            const bool ahead = k == 0 || k * dir > 0 || (dir == 0 && std::abs(k) == 1);
            if (ahead && x + k >= 0 && x + k < kGridSize) danger[y][x + k] = true;
          }
        }
      }
      constexpr std::array<int, 5> kDx = {0, -1, 0, 1, 0}, kDy = {0, 0, -1, 0, 1};
      int best = 0;
      double best_value = -1e9;
      for (int a = 0; a < 5; ++a) {
        const int nx = std::clamp(px + kDx[a], 0, 9), ny = std::clamp(py + kDy[a], 1, 8);
        double nearest_gold = 0;
        for (int y = 0; y < kGridSize; ++y) {
          for (int x = 0; x < kGridSize; ++x) {
            if (!at(y, x, 3)) continue;
            const double d = 1.0 + std::abs(y - ny) + std::abs(x - nx);
            nearest_gold = nearest_gold == 0 ? d : std::min(nearest_gold, d);
          }
        }
        const double value = (danger[ny][nx] ? -1000.0 : 0.0) - nearest_gold;
        if (value > best_value) best_value = value, best = a;
      }
      const StepResult r = env.Step(best, obs);
      total += r.reward;
      if (r.terminated) break;
    }
  }
  RecordProperty("mean_return", std::to_string(total / kEpisodes));
  EXPECT_GE(total / kEpisodes, 5.0);
}

}  // namespace
}  // namespace rlswarm::envs::minatar
