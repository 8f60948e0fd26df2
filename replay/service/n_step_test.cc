// NStepAccumulator on hand-made trajectories (termination, truncation,
// episodes shorter than n, auto-reset) and against a brute-force reference
// on random trajectories.

#include "replay/service/n_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "common/errors.h"

namespace rlswarm::replay {
namespace {

// Observations are one float, actions one int64.
constexpr std::size_t kObs = sizeof(float);
constexpr std::size_t kAct = sizeof(std::int64_t);

float ObsAt(const std::vector<std::byte>& column, std::int64_t row) {
  float v;
  std::memcpy(&v, column.data() + row * kObs, kObs);
  return v;
}

// One step of M envs, built from plain vectors.
struct StepData {
  std::vector<float> obs, q, rewards, next, final_obs;
  std::vector<std::int64_t> actions;
  std::vector<std::uint8_t> terminated, truncated;
  EnvStep Get(std::int64_t version = 0) const {
    return {std::as_bytes(std::span(obs)),
            std::as_bytes(std::span(actions)),
            q,
            rewards,
            terminated,
            truncated,
            std::as_bytes(std::span(next)),
            std::as_bytes(std::span(final_obs)),
            version};
  }
};

StepData OneEnv(float obs, float q, float reward, float next, bool terminated = false,
                bool truncated = false, float final_obs = 0) {
  return {{obs},        {q},        {reward}, {next}, {final_obs}, {static_cast<std::int64_t>(obs)},
          {terminated}, {truncated}};
}

TEST(NStepTest, FullLengthTransitionSumsNDiscountedRewardsAndBootstraps) {
  NStepAccumulator acc({3, 0.5}, 1, kObs, kAct);
  const std::vector<float> v = {0};
  acc.Observe(OneEnv(0, /*q=*/1, /*r=*/1, 1).Get());
  acc.SetCurrentValues(v);
  acc.Observe(OneEnv(1, 0, 2, 2).Get());
  acc.SetCurrentValues(v);
  EXPECT_EQ(acc.ready().size(), 0);  // fewer than n steps so far
  acc.Observe(OneEnv(2, 0, 3, 3).Get());
  ASSERT_EQ(acc.ready().size(), 1);
  EXPECT_EQ(acc.waiting(), 1);
  const std::vector<float> v3 = {8};  // V(s_3)
  acc.SetCurrentValues(v3);
  const TransitionColumns& t = acc.ready();
  EXPECT_EQ(ObsAt(t.observation, 0), 0);
  EXPECT_FLOAT_EQ(t.reward[0], 1 + 0.5 * 2 + 0.25 * 3);
  EXPECT_FLOAT_EQ(t.discount[0], 0.125);
  EXPECT_EQ(ObsAt(t.next_observation, 0), 3);
  EXPECT_DOUBLE_EQ(t.priority[0], std::abs(2.75 + 0.125 * 8 - 1));
}

TEST(NStepTest, RewardClipClipsEachStepBeforeTheSum) {
  NStepAccumulator acc({.n = 3, .gamma = 0.5, .reward_clip = 1}, 1, kObs, kAct);
  const std::vector<float> v = {0};
  acc.Observe(OneEnv(0, /*q=*/0, /*r=*/5, 1).Get());
  acc.SetCurrentValues(v);
  acc.Observe(OneEnv(1, 0, -0.25f, 2).Get());
  acc.SetCurrentValues(v);
  acc.Observe(OneEnv(2, 0, -7, 3).Get());
  acc.SetCurrentValues(v);
  ASSERT_EQ(acc.ready().size(), 1);
  // Clipping the 3-step sum instead (5 - 0.125 - 1.75 = 3.125 -> 1) would give 1.
  EXPECT_FLOAT_EQ(acc.ready().reward[0], 1 + 0.5f * -0.25f + 0.25f * -1);
  EXPECT_THROW(NStepAccumulator({.n = 3, .gamma = 0.5, .reward_clip = -1}, 1, kObs, kAct),
               InvalidArgument);
}

TEST(NStepTest, TerminationEmitsEveryPendingStepWithoutBootstrap) {
  NStepAccumulator acc({3, 0.5}, 1, kObs, kAct);
  acc.Observe(OneEnv(10, /*q=*/4, 1, 11).Get());
  acc.SetCurrentValues(std::vector<float>{100});
  // Terminates after 2 of n = 3 steps; the env auto-reset to 50.
  acc.Observe(OneEnv(11, /*q=*/1, 2, 50, /*terminated=*/true, false, /*final=*/12).Get());
  ASSERT_EQ(acc.ready().size(), 2);
  EXPECT_EQ(acc.waiting(), 0);  // nothing to bootstrap
  EXPECT_TRUE(acc.truncated_envs().empty());
  const TransitionColumns& t = acc.ready();
  EXPECT_FLOAT_EQ(t.reward[0], 1 + 0.5 * 2);
  EXPECT_FLOAT_EQ(t.discount[0], 0);
  EXPECT_EQ(ObsAt(t.next_observation, 0), 12);  // the final observation, not the reset one
  EXPECT_DOUBLE_EQ(t.priority[0], std::abs(2.0 - 4));
  EXPECT_FLOAT_EQ(t.reward[1], 2);
  EXPECT_FLOAT_EQ(t.discount[1], 0);
  EXPECT_DOUBLE_EQ(t.priority[1], std::abs(2.0 - 1));
}

TEST(NStepTest, TruncationBootstrapsEveryPendingStepFromTheFinalObservation) {
  NStepAccumulator acc({3, 0.5}, 1, kObs, kAct);
  acc.Observe(OneEnv(10, 4, 1, 11).Get());
  acc.SetCurrentValues(std::vector<float>{100});
  acc.Observe(OneEnv(11, 1, 2, 50, false, /*truncated=*/true, /*final=*/12).Get());
  ASSERT_EQ(acc.truncated_envs(), std::vector<std::int64_t>{0});
  EXPECT_EQ(acc.waiting(), 2);
  EXPECT_THROW(acc.Observe(OneEnv(50, 0, 0, 51).Get()), FailedPrecondition);
  acc.SetFinalValues(std::vector<float>{10});   // V(s_final = 12)
  acc.SetCurrentValues(std::vector<float>{0});  // V(50): nothing waits on it
  const TransitionColumns& t = acc.ready();
  ASSERT_EQ(t.size(), 2);
  EXPECT_FLOAT_EQ(t.discount[0], 0.25);
  EXPECT_FLOAT_EQ(t.discount[1], 0.5);
  EXPECT_EQ(ObsAt(t.next_observation, 0), 12);
  EXPECT_EQ(ObsAt(t.next_observation, 1), 12);
  EXPECT_DOUBLE_EQ(t.priority[0], std::abs(2 + 0.25 * 10 - 4));
  EXPECT_DOUBLE_EQ(t.priority[1], std::abs(2 + 0.5 * 10 - 1));
}

TEST(NStepTest, NewEpisodeAfterAutoResetNeverMixesWithTheOldOne) {
  NStepAccumulator acc({2, 1.0}, 1, kObs, kAct);
  acc.Observe(OneEnv(1, 0, 1, 50, true, false, 2).Get());  // a one-step episode
  acc.SetCurrentValues(std::vector<float>{0});
  ASSERT_EQ(acc.ready().size(), 1);
  EXPECT_FLOAT_EQ(acc.ready().reward[0], 1);
  acc.ClearReady();
  acc.Observe(OneEnv(50, 0, 10, 51).Get());
  acc.SetCurrentValues(std::vector<float>{0});
  acc.Observe(OneEnv(51, 0, 20, 52).Get());
  ASSERT_EQ(acc.ready().size(), 1);
  EXPECT_EQ(ObsAt(acc.ready().observation, 0), 50);
  EXPECT_FLOAT_EQ(acc.ready().reward[0], 30);  // only the new episode's rewards
}

TEST(NStepTest, OneStepReturnsDiscountByGamma) {
  NStepAccumulator acc({1, 0.9}, 1, kObs, kAct);
  acc.Observe(OneEnv(1, 0.5, 2, 3).Get(/*version=*/7));
  acc.SetCurrentValues(std::vector<float>{10});
  ASSERT_EQ(acc.ready().size(), 1);
  EXPECT_FLOAT_EQ(acc.ready().discount[0], 0.9f);
  EXPECT_NEAR(acc.ready().priority[0], std::abs(2 + 0.9 * 10 - 0.5), 1e-5);
  EXPECT_EQ(acc.ready().policy_version[0], 7);
}

TEST(NStepTest, BadSizesAndOptionsAreRejected) {
  EXPECT_THROW(NStepAccumulator({0, 0.9}, 1, kObs, kAct), InvalidArgument);
  EXPECT_THROW(NStepAccumulator({3, 1.5}, 1, kObs, kAct), InvalidArgument);
  NStepAccumulator acc({3, 0.9}, 2, kObs, kAct);
  EXPECT_THROW(acc.Observe(OneEnv(1, 0, 0, 1).Get()), InvalidArgument);  // 1 row for 2 envs
  EXPECT_THROW(acc.SetCurrentValues(std::vector<float>{1}), InvalidArgument);
}

// Random trajectories for M envs against a reference computed from the
// whole episodes afterwards.
TEST(NStepTest, MatchesABruteForceReferenceOnRandomTrajectories) {
  for (int n : {1, 2, 3, 5}) {
    const int m = 4;
    const double gamma = 0.9;
    NStepAccumulator acc({n, gamma}, m, kObs, kAct);
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> reward(-1, 1);
    std::uniform_int_distribution<int> end(0, 9);  // 1/10 terminated, 1/10 truncated
    auto value = [](float obs) { return obs * 0.001f; };
    auto q_of = [](float obs) { return obs * 0.002f; };
    // Reference: per env, its episodes as (obs, reward) lists plus the end.
    struct Episode {
      std::vector<float> obs, rewards;
      float final_obs = 0;
      int ended = 0;  // 0 running, 1 terminated, 2 truncated
    };
    std::vector<std::vector<Episode>> episodes(m, std::vector<Episode>(1));
    float counter = 1;
    std::vector<float> current(m);
    for (auto& c : current) c = counter++;
    std::vector<float> current_values(m);
    for (int e = 0; e < m; ++e) current_values[e] = value(current[e]);
    acc.SetCurrentValues(current_values);
    std::map<std::tuple<float, float, float>, double> emitted;  // (obs, next, discount) -> priority
    std::vector<std::tuple<float, float, float, float>> rows;
    for (int step = 0; step < 400; ++step) {
      StepData s;
      s.obs = current;
      for (int e = 0; e < m; ++e) {
        const float r = reward(rng);
        const int kind = end(rng);
        const bool terminated = kind == 0;
        const bool truncated = kind == 1;
        const float next = counter++;
        s.q.push_back(q_of(current[e]));
        s.rewards.push_back(r);
        s.actions.push_back(e);
        s.terminated.push_back(terminated);
        s.truncated.push_back(truncated);
        Episode& ep = episodes[e].back();
        ep.obs.push_back(current[e]);
        ep.rewards.push_back(r);
        if (terminated || truncated) {
          ep.final_obs = next;
          ep.ended = terminated ? 1 : 2;
          s.final_obs.push_back(next);
          const float reset = counter++;
          s.next.push_back(reset);
          episodes[e].emplace_back();
          current[e] = reset;
        } else {
          s.final_obs.push_back(0);
          s.next.push_back(next);
          current[e] = next;
        }
      }
      acc.Observe(s.Get());
      std::vector<float> final_values;
      for (auto e : acc.truncated_envs()) final_values.push_back(value(s.final_obs[e]));
      acc.SetFinalValues(final_values);
      for (int e = 0; e < m; ++e) current_values[e] = value(current[e]);
      acc.SetCurrentValues(current_values);
    }
    const TransitionColumns& t = acc.ready();
    for (std::int64_t i = 0; i < t.size(); ++i) {
      rows.emplace_back(ObsAt(t.observation, i), t.reward[i], t.discount[i],
                        ObsAt(t.next_observation, i));
      emitted[{ObsAt(t.observation, i), ObsAt(t.next_observation, i), t.discount[i]}] =
          t.priority[i];
    }
    // Every step of every episode, with its expected transition.
    std::int64_t expected_count = 0;
    for (int e = 0; e < m; ++e) {
      for (const Episode& ep : episodes[e]) {
        const int len = static_cast<int>(ep.obs.size());
        for (int i = 0; i < len; ++i) {
          const int steps = std::min(n, len - i);
          const bool reaches_end = i + steps == len;
          if (!reaches_end && steps < n) continue;
          if (reaches_end && ep.ended == 0) {
            // Emitted only once n steps exist after it (or the episode ends).
            if (steps < n) continue;
          }
          double r = 0;
          double scale = 1;
          for (int k = 0; k < steps; ++k) {
            r += scale * ep.rewards[i + k];
            scale *= gamma;
          }
          const float next = reaches_end ? (ep.ended ? ep.final_obs : 0) : ep.obs[i + steps];
          if (reaches_end && ep.ended == 0) continue;  // next obs not yet known: skip check
          const double discount = (reaches_end && ep.ended == 1) ? 0.0 : scale;
          const auto key = std::make_tuple(ep.obs[i], next, static_cast<float>(discount));
          ASSERT_TRUE(emitted.count(key))
              << "n=" << n << " missing transition from obs " << ep.obs[i];
          const double expected_priority = std::abs(r + discount * value(next) - q_of(ep.obs[i]));
          EXPECT_NEAR(emitted[key], expected_priority, 1e-4) << "n=" << n;
          ++expected_count;
        }
      }
    }
    // Full-length transitions whose next obs is the current one were counted
    // as emitted above only when within an episode; everything emitted is
    // expected, nothing more.
    EXPECT_GT(expected_count, 1000);
    EXPECT_GE(t.size(), expected_count);
    EXPECT_LE(t.size(), expected_count + m);  // at most one per env ends at the current obs
  }
}

}  // namespace
}  // namespace rlswarm::replay
