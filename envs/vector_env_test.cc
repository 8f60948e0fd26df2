// VectorEnv against the single Env it batches: same seeds, same actions,
// same observations, including auto-reset and final observations.

#include "envs/vector_env.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

// A fixed, env-dependent action pattern so that episodes differ per env.
std::int64_t ActionFor(std::int64_t env, std::int64_t step, std::int64_t n) {
  return (env * 7 + step * 3 + step / 5) % n;
}

std::vector<std::byte> Row(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

// Replays env i of a kContinue VectorEnv on a single Env and checks every
// observation, reward, flag and final observation.
void ExpectMatchesSingleEnvs(const std::string& name, std::int64_t num_envs, int threads,
                             int steps) {
  VectorEnvOptions options;
  options.num_envs = num_envs;
  options.num_threads = threads;
  VectorEnv venv(name, options);
  std::vector<std::unique_ptr<Env>> singles;
  const std::size_t bytes = venv.observation_bytes();
  std::vector<std::vector<std::byte>> obs(num_envs, std::vector<std::byte>(bytes));
  venv.Reset(99);
  for (std::int64_t i = 0; i < num_envs; ++i) {
    singles.push_back(MakeEnv(name));
    singles[i]->Reset(DeriveSeed(99, i), obs[i]);
    ASSERT_EQ(Row(venv.observation(i)), obs[i]);
  }
  const std::int64_t n = venv.spec().action.num_actions;
  int episodes_ended = 0;
  for (int t = 0; t < steps; ++t) {
    std::vector<std::int64_t> actions(num_envs);
    for (std::int64_t i = 0; i < num_envs; ++i) actions[i] = ActionFor(i, t, n);
    venv.Step(actions);
    for (std::int64_t i = 0; i < num_envs; ++i) {
      const StepResult r = singles[i]->Step(actions[i], obs[i]);
      ASSERT_EQ(venv.rewards()[i], r.reward);
      ASSERT_EQ(venv.terminated()[i], r.terminated);
      ASSERT_EQ(venv.truncated()[i], r.truncated);
      if (r.terminated || r.truncated) {
        ++episodes_ended;
        ASSERT_EQ(Row(venv.final_observation(i)), obs[i]) << "final obs, env " << i << " t " << t;
        singles[i]->Reset(std::nullopt, obs[i]);  // auto-reset continues the stream
      }
      ASSERT_EQ(Row(venv.observation(i)), obs[i]) << "env " << i << " t " << t;
    }
  }
  EXPECT_GT(episodes_ended, 0) << "the test never exercised auto-reset";
}

TEST(VectorEnvTest, MatchesSingleCartPolesThroughAutoResets) {
  ExpectMatchesSingleEnvs("CartPole-v1", 5, 1, 300);
}

TEST(VectorEnvTest, MatchesSingleMinAtarEnvsThroughAutoResets) {
  ExpectMatchesSingleEnvs("MinAtar/Breakout", 4, 1, 400);
}

// Gymnasium's next-step autoreset: the step that ends an episode returns its
// final observation, and the next step resets that env (reward 0, no flags)
// whatever its action, even an out-of-range one.
TEST(VectorEnvTest, NextStepAutoResetResetsOnTheStepAfterTheEpisodeEnds) {
  for (int threads : {1, 2}) {
    const std::int64_t num_envs = 5;
    VectorEnvOptions options;
    options.num_envs = num_envs;
    options.num_threads = threads;
    options.autoreset = AutoResetMode::kNextStep;
    VectorEnv venv("CartPole-v1", options);
    std::vector<std::unique_ptr<Env>> singles;
    std::vector<std::vector<std::byte>> obs(num_envs,
                                            std::vector<std::byte>(venv.observation_bytes()));
    std::vector<bool> must_reset(num_envs, false);
    venv.Reset(7);
    for (std::int64_t i = 0; i < num_envs; ++i) {
      singles.push_back(MakeEnv("CartPole-v1"));
      singles[i]->Reset(DeriveSeed(7, i), obs[i]);
    }
    int resets = 0;
    for (int t = 0; t < 300; ++t) {
      std::vector<std::int64_t> actions(num_envs);
      for (std::int64_t i = 0; i < num_envs; ++i) {
        actions[i] = must_reset[i] ? -1 : ActionFor(i, t, 2);  // -1: ignored, not validated
      }
      venv.Step(actions);
      for (std::int64_t i = 0; i < num_envs; ++i) {
        if (must_reset[i]) {
          singles[i]->Reset(std::nullopt, obs[i]);
          ++resets;
          ASSERT_EQ(venv.rewards()[i], 0.0f);
          ASSERT_FALSE(venv.done(i));
          ASSERT_EQ(venv.episode_length(i), 0);
          must_reset[i] = false;
        } else {
          const StepResult r = singles[i]->Step(actions[i], obs[i]);
          ASSERT_EQ(venv.rewards()[i], r.reward);
          ASSERT_EQ(venv.terminated()[i], r.terminated);
          ASSERT_EQ(venv.truncated()[i], r.truncated);
          if (r.terminated || r.truncated) {
            ASSERT_EQ(Row(venv.final_observation(i)), obs[i]);
            must_reset[i] = true;
          }
        }
        ASSERT_EQ(Row(venv.observation(i)), obs[i]) << "env " << i << " t " << t;
      }
    }
    EXPECT_GT(resets, 0) << "the test never exercised the reset step";
  }
}

TEST(VectorEnvTest, ThreadsGiveTheSameResultsAsOneThread) {
  ExpectMatchesSingleEnvs("CartPole-v1", 9, 3, 300);
  ExpectMatchesSingleEnvs("MinAtar/Asterix", 6, 4, 200);
}

TEST(VectorEnvTest, EnvIDependsOnlyOnSeedAndIndexNotOnTheNumberOfEnvs) {
  VectorEnvOptions small, large;
  small.num_envs = 2;
  large.num_envs = 7;
  VectorEnv a("MinAtar/Seaquest", small), b("MinAtar/Seaquest", large);
  a.Reset(5);
  b.Reset(5);
  for (int t = 0; t < 200; ++t) {
    std::vector<std::int64_t> aa(2), ba(7);
    for (int i = 0; i < 7; ++i) ba[i] = ActionFor(i, t, 6);
    aa[0] = ba[0];
    aa[1] = ba[1];
    a.Step(aa);
    b.Step(ba);
    for (int i = 0; i < 2; ++i) ASSERT_EQ(Row(a.observation(i)), Row(b.observation(i)));
  }
}

TEST(VectorEnvTest, EpisodeTotalsAreReportedOnTheStepThatEndsTheEpisode) {
  VectorEnvOptions o;
  o.num_envs = 3;
  VectorEnv venv("CartPole-v1", o);
  venv.Reset(1);
  std::vector<double> running(3, 0.0);
  std::vector<std::int64_t> lengths(3, 0);
  int checked = 0;
  for (int t = 0; t < 200; ++t) {
    venv.Step(std::vector<std::int64_t>{0, 1, t % 2});
    for (int i = 0; i < 3; ++i) {
      running[i] += venv.rewards()[i];
      ++lengths[i];
      if (venv.done(i)) {
        EXPECT_EQ(venv.episode_return(i), running[i]);
        EXPECT_EQ(venv.episode_length(i), lengths[i]);
        running[i] = 0.0;
        lengths[i] = 0;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 3);
}

TEST(VectorEnvTest, SeedPerEpisodeSeedsEpisodeKWithDeriveSeedK) {
  VectorEnvOptions o;
  o.num_envs = 3;
  o.seeding = AutoResetSeeding::kSeedPerEpisode;
  VectorEnv venv("CartPole-v1", o);
  venv.Reset(11);
  auto single = MakeEnv("CartPole-v1");
  std::vector<std::byte> obs(venv.observation_bytes());
  std::uint64_t max_id = 0;
  for (int t = 0; t < 300; ++t) {
    venv.Step(std::vector<std::int64_t>{1, 1, 0});
    for (int i = 0; i < 3; ++i) {
      if (!venv.done(i)) continue;
      // The new episode's first observation is that of a fresh env seeded
      // with DeriveSeed(11, id).
      single->Reset(DeriveSeed(11, venv.episode_id(i)), obs);
      EXPECT_EQ(Row(venv.observation(i)), obs);
      max_id = std::max(max_id, venv.episode_id(i));
    }
  }
  EXPECT_GT(max_id, 5u);
}

TEST(VectorEnvTest, ABadActionThrowsBeforeAnyEnvMoves) {
  VectorEnvOptions o;
  o.num_envs = 4;
  VectorEnv venv("CartPole-v1", o);
  EXPECT_THROW(venv.Step(std::vector<std::int64_t>{0, 0, 0, 0}), FailedPrecondition);
  venv.Reset(3);
  const std::vector<std::byte> before(venv.observations(),
                                      venv.observations() + 4 * venv.observation_bytes());
  EXPECT_THROW(venv.Step(std::vector<std::int64_t>{0, 1, 2, 0}), InvalidArgument);
  EXPECT_THROW(venv.Step(std::vector<std::int64_t>{0, 1}), InvalidArgument);
  EXPECT_THROW(venv.Step(std::vector<float>{0, 0, 0, 0}), InvalidArgument);
  const std::vector<std::byte> after(venv.observations(),
                                     venv.observations() + 4 * venv.observation_bytes());
  EXPECT_EQ(before, after);
}

TEST(VectorEnvTest, ContinuousActionsAreCheckedAgainstTheirBounds) {
  VectorEnvOptions o;
  o.num_envs = 2;
  VectorEnv venv("Pendulum-v1", o);
  venv.Reset(0);
  EXPECT_THROW(venv.Step(std::vector<float>{0.0f, 3.0f}), InvalidArgument);
  EXPECT_NO_THROW(venv.Step(std::vector<float>{-2.0f, 2.0f}));
  EXPECT_THROW(venv.Step(std::vector<std::int64_t>{0, 0}), InvalidArgument);
}

TEST(VectorEnvTest, InvalidOptionsAreRejected) {
  VectorEnvOptions o;
  o.num_envs = 0;
  EXPECT_THROW(VectorEnv("CartPole-v1", o), InvalidArgument);
  o.num_envs = 2;
  o.num_threads = 0;
  EXPECT_THROW(VectorEnv("CartPole-v1", o), InvalidArgument);
  o.num_threads = 1;
  EXPECT_THROW(VectorEnv("NoSuchEnv", o), NotFound);
}

}  // namespace
}  // namespace rlswarm::envs
