#include "envs/episode_runner.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

std::vector<EpisodeResult> RunRandom(const std::string& name, std::int64_t num_envs, int threads,
                                     std::int64_t episodes, std::uint64_t seed) {
  VectorEnvOptions o;
  o.num_envs = num_envs;
  o.num_threads = threads;
  o.seeding = AutoResetSeeding::kSeedPerEpisode;
  VectorEnv env(name, o);
  RandomPolicy policy(env.spec(), num_envs, seed);
  return RunEpisodes(env, policy, episodes, seed);
}

void ExpectSame(const std::vector<EpisodeResult>& a, const std::vector<EpisodeResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].episode_id, i);
    EXPECT_EQ(a[i].episode_id, b[i].episode_id);
    EXPECT_EQ(a[i].episode_return, b[i].episode_return) << "episode " << i;
    EXPECT_EQ(a[i].length, b[i].length) << "episode " << i;
  }
}

TEST(EpisodeRunnerTest, ResultsDoNotDependOnTheNumberOfEnvsOrThreads) {
  for (const char* name : {"CartPole-v1", "Pendulum-v1", "MinAtar/Breakout"}) {
    SCOPED_TRACE(name);
    const auto one = RunRandom(name, 1, 1, 12, 3);
    ExpectSame(one, RunRandom(name, 5, 1, 12, 3));
    ExpectSame(one, RunRandom(name, 16, 2, 12, 3));
  }
}

TEST(EpisodeRunnerTest, DifferentSeedsGiveDifferentEpisodes) {
  const auto a = RunRandom("CartPole-v1", 4, 1, 20, 1);
  const auto b = RunRandom("CartPole-v1", 4, 1, 20, 2);
  int differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i].length != b[i].length;
  EXPECT_GT(differ, 5);
}

TEST(EpisodeRunnerTest, RandomCartPoleReturnsAboutTwentyTwo) {
  // A uniform random policy balances CartPole for ~22 steps on average
  // (reward 1 per step); a broken env or policy moves this far away.
  const auto s = Summarize(RunRandom("CartPole-v1", 8, 1, 2000, 0));
  EXPECT_NEAR(s.mean_return, 22.3, 1.5);
  EXPECT_EQ(s.mean_return, s.mean_length);
  EXPECT_GE(s.min_return, 8.0);
}

TEST(EpisodeRunnerTest, TheCallbackSeesEveryCountedEpisodeAndCanStopTheRunEarly) {
  VectorEnvOptions o;
  o.num_envs = 4;
  o.seeding = AutoResetSeeding::kSeedPerEpisode;
  VectorEnv env("CartPole-v1", o);
  RandomPolicy policy(env.spec(), 4, 3);
  std::int64_t seen = 0;
  const auto all = RunEpisodes(env, policy, 20, 3, [&](const EpisodeResult&) {
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, 20);
  EXPECT_EQ(all.size(), 20u);

  seen = 0;
  const auto first_seven = RunEpisodes(env, policy, 20, 3, [&](const EpisodeResult& e) {
    EXPECT_LT(e.episode_id, 20u);
    return ++seen < 7;
  });
  EXPECT_EQ(seen, 7);
  ASSERT_EQ(first_seven.size(), 7u);
  // The episodes that did finish are the same episodes as in the full run.
  for (const EpisodeResult& e : first_seven) {
    EXPECT_EQ(e.episode_return, all[e.episode_id].episode_return) << e.episode_id;
  }
}

TEST(EpisodeRunnerTest, SummarizeComputesPopulationStatistics) {
  const auto s = Summarize({{0, 1.0, 10}, {1, 3.0, 20}, {2, 5.0, 30}});
  EXPECT_EQ(s.episodes, 3);
  EXPECT_DOUBLE_EQ(s.mean_return, 3.0);
  EXPECT_DOUBLE_EQ(s.std_return, std::sqrt(8.0 / 3.0));
  EXPECT_EQ(s.min_return, 1.0);
  EXPECT_EQ(s.max_return, 5.0);
  EXPECT_DOUBLE_EQ(s.mean_length, 20.0);
}

TEST(EpisodeRunnerTest, RequiresPerEpisodeSeedingAndAPositiveCount) {
  VectorEnvOptions o;
  o.num_envs = 2;
  o.seeding = AutoResetSeeding::kSeedPerEpisode;
  VectorEnv env("CartPole-v1", o);
  RandomPolicy policy(env.spec(), 2, 0);
  EXPECT_THROW(RunEpisodes(env, policy, 0, 0), InvalidArgument);
  o.seeding = AutoResetSeeding::kContinue;
  VectorEnv continuing("CartPole-v1", o);
  EXPECT_THROW(RunEpisodes(continuing, policy, 5, 0), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::envs
