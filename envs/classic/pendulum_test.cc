#include "envs/classic/pendulum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <span>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

using Obs = std::array<float, 3>;
using std::numbers::pi;

std::span<std::byte> Bytes(Obs& obs) { return std::as_writable_bytes(std::span(obs)); }

StepResult StepWith(Pendulum& env, float torque, Obs& obs) {
  const float action[1] = {torque};
  return env.Step(std::span<const float>(action), Bytes(obs));
}

void ResetTo(Pendulum& env, const Pendulum::State& state) {
  Obs obs;
  env.Reset(0, Bytes(obs));
  env.SetState(state);
}

struct Expected {
  float torque;
  Pendulum::State state;
  Obs obs;
  float reward;
};

// Expected values: Gymnasium's step() and angle_normalize evaluated in float64
// by an independent script (the torque is float32, as Gymnasium's Box gives
// it), observations and rewards rounded to float32.
void ExpectTrajectory(const Pendulum::State& start, const std::vector<Expected>& steps) {
  Pendulum env;
  ResetTo(env, start);
  for (const Expected& want : steps) {
    Obs obs;
    const StepResult r = StepWith(env, want.torque, obs);
    EXPECT_NEAR(env.state().theta, want.state.theta, 1e-12);
    EXPECT_NEAR(env.state().theta_dot, want.state.theta_dot, 1e-12);
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(obs[i], want.obs[i]) << "element " << i;
    EXPECT_FLOAT_EQ(r.reward, want.reward);
    EXPECT_FALSE(r.terminated);
    EXPECT_FALSE(r.truncated);
  }
}

TEST(PendulumTest, HasGymnasiumSpecWhenDefaultConstructed) {
  Pendulum env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.name, "Pendulum-v1");
  EXPECT_EQ(spec.max_episode_steps, 200);
  EXPECT_EQ(spec.observation.shape, std::vector<std::int64_t>{3});
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  EXPECT_EQ(spec.observation.low, (std::vector<double>{-1.0, -1.0, -8.0}));
  EXPECT_EQ(spec.observation.high, (std::vector<double>{1.0, 1.0, 8.0}));
  EXPECT_EQ(spec.action.kind, ActionKind::kContinuous);
  EXPECT_EQ(spec.action.array.shape, std::vector<std::int64_t>{1});
  EXPECT_EQ(spec.action.array.dtype, DType::kFloat32);
  EXPECT_EQ(spec.action.array.Low(0), -2.0);
  EXPECT_EQ(spec.action.array.High(0), 2.0);
  EXPECT_EQ(Pendulum(0).spec().max_episode_steps, 0);
}

TEST(PendulumTest, FollowsGymnasiumDynamicsAndCostWhenStartedFromFixedState) {
  ExpectTrajectory({1.0, 0.5}, {{1.5f,
                                 {1.0678051619302962, 1.3561032386059226},
                                 {0.4820483922958374f, 0.8761445879936218f, 1.3561031818389893f},
                                 -1.027250051498413f},
                                {-2.0f,
                                 {1.1534657462597302, 1.713211686588682},
                                 {0.4053215980529785f, 0.9141741991043091f, 1.7132116556167603f},
                                 -1.3281095027923584f},
                                {0.3f,
                                 {1.275657862033591, 2.4438423154772173},
                                 {0.29087233543395996f, 0.95676189661026f, 2.4438424110412598f},
                                 -1.6240826845169067f}});
}

TEST(PendulumTest, NormalisesAngleIntoMinusPiToPiForTheCost) {
  // 4.0 rad costs as 4.0 - 2 pi; -7.0 rad as -7.0 + 2 pi.
  ExpectTrajectory({4.0, -1.0}, {{0.0f,
                                  {3.9216199064259527, -1.5676018714809463},
                                  {-0.7108943462371826f, -0.703298807144165f, -1.5676019191741943f},
                                  -5.3129353523254395f}});
  ExpectTrajectory({-7.0, 2.0}, {{1.0f,
                                  {-6.917136997451955, 1.6572600509609081},
                                  {0.8056930899620056f, -0.592333197593689f, 1.6572600603103638f},
                                  -0.9148232936859131f}});
  // The state keeps the unnormalised angle, as Gymnasium's does.
  Pendulum env;
  ResetTo(env, {20.0, 0.0});
  Obs obs;
  StepWith(env, 0.0f, obs);
  EXPECT_GT(env.state().theta, 19.0);
}

TEST(PendulumTest, ClipsAngularVelocityToPlusMinus8) {
  ExpectTrajectory({pi / 2, 7.9}, {{2.0f,
                                    {1.9707963267948965, 8.0},
                                    {-0.3894183337688446f, 0.9210609793663025f, 8.0f},
                                    -8.712401390075684f}});
  Pendulum env;
  ResetTo(env, {-pi / 2, -7.9});
  Obs obs;
  StepWith(env, -2.0f, obs);
  EXPECT_EQ(env.state().theta_dot, -8.0);
  EXPECT_EQ(obs[2], -8.0f);
}

TEST(PendulumTest, RewardsZeroWhenUprightAtRestWithNoTorque) {
  Pendulum env;
  ResetTo(env, {0.0, 0.0});
  Obs obs;
  const StepResult r = StepWith(env, 0.0f, obs);
  EXPECT_EQ(r.reward, 0.0f);
  EXPECT_EQ(obs, (Obs{1.0f, 0.0f, 0.0f}));
}

TEST(PendulumTest, NeverTerminatesAndTruncatesOnStep200) {
  Pendulum env;
  Obs obs;
  env.Reset(3, Bytes(obs));
  Rng torques(8);
  for (int t = 1; t <= 200; ++t) {
    const StepResult r = StepWith(env, static_cast<float>(torques.Uniform(-2.0, 2.0)), obs);
    ASSERT_FALSE(r.terminated);
    ASSERT_EQ(r.truncated, t == 200) << "step " << t;
    // Gymnasium's documented cost range: -(pi^2 + 0.1 * 8^2 + 0.001 * 2^2).
    ASSERT_LE(r.reward, 0.0f);
    ASSERT_GE(r.reward, -16.2736044f);
    ASSERT_LE(std::abs(obs[2]), 8.0f);
  }
  EXPECT_THROW(StepWith(env, 0.0f, obs), FailedPrecondition);
}

TEST(PendulumTest, NeverTruncatesWhenMaxEpisodeStepsIsZero) {
  Pendulum env(0);
  Obs obs;
  env.Reset(3, Bytes(obs));
  for (int t = 1; t <= 1000; ++t) ASSERT_FALSE(StepWith(env, 1.0f, obs).truncated);
}

TEST(PendulumTest, DrawsInitialStateFromPlusMinusPiAndPlusMinusOneOverManySeeds) {
  Pendulum env;
  Obs obs;
  double th_lo = 0, th_hi = 0, dot_lo = 0, dot_hi = 0;
  for (int seed = 0; seed < 4000; ++seed) {
    env.Reset(seed, Bytes(obs));
    const Pendulum::State& s = env.state();
    ASSERT_GE(s.theta, -pi);
    ASSERT_LT(s.theta, pi);
    ASSERT_GE(s.theta_dot, -1.0);
    ASSERT_LT(s.theta_dot, 1.0);
    ASSERT_EQ(obs, (Obs{static_cast<float>(std::cos(s.theta)),
                        static_cast<float>(std::sin(s.theta)), static_cast<float>(s.theta_dot)}));
    th_lo = std::min(th_lo, s.theta);
    th_hi = std::max(th_hi, s.theta);
    dot_lo = std::min(dot_lo, s.theta_dot);
    dot_hi = std::max(dot_hi, s.theta_dot);
  }
  EXPECT_LT(th_lo, -3.1);
  EXPECT_GT(th_hi, 3.1);
  EXPECT_LT(dot_lo, -0.99);
  EXPECT_GT(dot_hi, 0.99);
}

std::vector<float> RecordEpisode(std::uint64_t seed) {
  Pendulum env;
  Obs obs;
  env.Reset(seed, Bytes(obs));
  std::vector<float> record(obs.begin(), obs.end());
  Rng torques(13);
  for (bool done = false; !done;) {
    const StepResult r = StepWith(env, static_cast<float>(torques.Uniform(-2.0, 2.0)), obs);
    record.insert(record.end(), obs.begin(), obs.end());
    record.push_back(r.reward);
    done = r.terminated || r.truncated;
  }
  env.Reset(std::nullopt, Bytes(obs));
  record.insert(record.end(), obs.begin(), obs.end());
  return record;
}

TEST(PendulumTest, ReplaysTheSameEpisodeWhenGivenTheSameSeed) {
  const std::vector<float> a = RecordEpisode(42);
  EXPECT_EQ(a, RecordEpisode(42));
  EXPECT_EQ(a.size(), 3u + 200u * 4u + 3u);
  EXPECT_NE(a, RecordEpisode(43));
}

TEST(PendulumTest, AcceptsTorquesAtExactlyPlusMinus2) {
  Pendulum env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  EXPECT_NO_THROW(StepWith(env, 2.0f, obs));
  EXPECT_NO_THROW(StepWith(env, -2.0f, obs));
  EXPECT_EQ(env.elapsed_steps(), 2);
}

TEST(PendulumTest, RejectsBadActionWithoutChangingAnything) {
  Pendulum env;
  Obs obs;
  env.Reset(5, Bytes(obs));
  StepWith(env, 1.0f, obs);
  const Pendulum::State before = env.state();
  const Obs sentinel = {-7.0f, -7.0f, -7.0f};
  Obs buffer = sentinel;
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (float bad : {kNaN, kInf, -kInf, std::nextafter(2.0f, 3.0f), -2.5f, 100.0f}) {
    EXPECT_THROW(StepWith(env, bad, buffer), InvalidArgument) << bad;
  }
  const float two[2] = {0.0f, 0.0f};
  EXPECT_THROW(env.Step(std::span<const float>(two), Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(std::span<const float>(), Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(std::int64_t{0}, Bytes(buffer)), InvalidArgument);  // discrete
  EXPECT_EQ(buffer, sentinel);
  EXPECT_EQ(env.elapsed_steps(), 1);
  EXPECT_EQ(env.state().theta, before.theta);
  EXPECT_EQ(env.state().theta_dot, before.theta_dot);
  EXPECT_NO_THROW(StepWith(env, 0.5f, buffer));
}

TEST(PendulumTest, ThrowsFailedPreconditionWhenSteppedBeforeReset) {
  Pendulum env;
  Obs obs;
  EXPECT_THROW(StepWith(env, 0.0f, obs), FailedPrecondition);
}

}  // namespace
}  // namespace rlswarm::envs
