#include "envs/classic/acrobot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <optional>
#include <span>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

using Obs = std::array<float, 6>;
using std::numbers::pi;

std::span<std::byte> Bytes(Obs& obs) { return std::as_writable_bytes(std::span(obs)); }

// Height of the tip above the fixed joint, in link lengths (Gymnasium's _terminal).
double Height(const Acrobot::State& s) {
  return -std::cos(s.theta1) - std::cos(s.theta2 + s.theta1);
}

void ResetTo(Acrobot& env, const Acrobot::State& state) {
  Obs obs;
  env.Reset(0, Bytes(obs));
  env.SetState(state);
}

struct Expected {
  std::int64_t action;
  Acrobot::State state;
  Obs obs;
  float reward;
  bool terminated;
};

// Steps from `start` and checks each step against values computed from
// Gymnasium's _dsdt ("book"), rk4, wrap and bound by an independent script.
void ExpectTrajectory(const Acrobot::State& start, const std::vector<Expected>& steps) {
  Acrobot env;
  ResetTo(env, start);
  for (const Expected& want : steps) {
    Obs obs;
    const StepResult r = env.Step(want.action, Bytes(obs));
    const Acrobot::State& s = env.state();
    EXPECT_NEAR(s.theta1, want.state.theta1, 1e-12);
    EXPECT_NEAR(s.theta2, want.state.theta2, 1e-12);
    EXPECT_NEAR(s.dtheta1, want.state.dtheta1, 1e-12);
    EXPECT_NEAR(s.dtheta2, want.state.dtheta2, 1e-12);
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(obs[i], want.obs[i]) << "element " << i;
    EXPECT_EQ(r.reward, want.reward);
    EXPECT_EQ(r.terminated, want.terminated);
    EXPECT_FALSE(r.truncated);
  }
}

TEST(AcrobotTest, HasGymnasiumSpecWhenDefaultConstructed) {
  Acrobot env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.name, "Acrobot-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_EQ(spec.observation.shape, std::vector<std::int64_t>{6});
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  // float32(4 pi) and float32(9 pi), as in Gymnasium's float32 Box.
  const std::vector<double> high = {1.0, 1.0, 1.0, 1.0, 12.566370964050293, 28.274333953857422};
  EXPECT_EQ(spec.observation.high, high);
  EXPECT_EQ(spec.observation.low,
            (std::vector<double>{-1.0, -1.0, -1.0, -1.0, -high[4], -high[5]}));
  EXPECT_EQ(spec.action.kind, ActionKind::kDiscrete);
  EXPECT_EQ(spec.action.num_actions, 3);
  EXPECT_EQ(Acrobot(0).spec().max_episode_steps, 0);
}

TEST(AcrobotTest, FollowsBookDynamicsWithRk4WhenStartedFromFixedState) {
  ExpectTrajectory(
      {0.3, -0.5, 1.0, -2.0},
      {{2,
        {0.4330219534070483, -0.7725956294030004, 0.3083581437635544, -0.692379782091312},
        {0.907701849937439f, 0.4196157455444336f, 0.716101348400116f, -0.6979963183403015f,
         0.3083581328392029f, -0.6923797726631165f},
        -1.0f,
        false},
       {0,
        {0.443007977188895, -0.8332174172308142, -0.2096538583324966, 0.09179898883145698},
        {0.9034663438796997f, 0.42865899205207825f, 0.6724980473518372f, -0.7400988936424255f,
         -0.2096538543701172f, 0.09179899096488953f},
        -1.0f,
        false},
       {1,
        {0.34064042876893663, -0.7068174632980924, -0.7953654517667603, 1.1533932750746507},
        {0.9425408840179443f, 0.33409079909324646f, 0.7604325413703918f, -0.649416983127594f,
         -0.7953654527664185f, 1.153393268585205f},
        -1.0f,
        false}});
}

TEST(AcrobotTest, WrapsAnglesAndClipsFirstVelocityAtFourPi) {
  // theta1 passes pi and wraps to the negative side; dtheta1 is clipped to 4 pi.
  ExpectTrajectory({0.0, 0.0, 12.5, 28.2},
                   {{2,
                     {-2.2459740171063274, -2.129059936743312, 4 * pi, 27.952375002631516},
                     {-0.6250360012054443f, -0.7805958986282349f, -0.5297142267227173f,
                      -0.8481761813163757f, 12.566370964050293f, 27.952375411987305f},
                     -1.0f,
                     false}});
}

TEST(AcrobotTest, ClipsSecondVelocityAtNinePiInBothDirections) {
  ExpectTrajectory({0.0, 0.0, 0.0, 28.2},
                   {{2,
                     {0.8367261738621901, -1.187454483404613, 0.4702325051242819, 9 * pi},
                     {0.6698970794677734f, 0.7424539923667908f, 0.37402185797691345f,
                      -0.927419900894165f, 0.4702325165271759f, 28.274333953857422f},
                     -1.0f,
                     false}});
  ExpectTrajectory({0.0, 0.0, 0.0, -28.2},
                   {{0,
                     {-0.8367261738621901, 1.187454483404613, -0.4702325051242819, -9 * pi},
                     {0.6698970794677734f, -0.7424539923667908f, 0.37402185797691345f,
                      0.927419900894165f, -0.4702325165271759f, -28.274333953857422f},
                     -1.0f,
                     false}});
}

TEST(AcrobotTest, TerminatesWithZeroRewardWhenTipRisesAboveOneLink) {
  ExpectTrajectory(
      {3.0, 0.2, 3.0, 0.0},
      {{2,
        {-2.68085230530244, 0.21815124092047972, 3.151483917897639, 0.07432444124477448},
        {-0.8957235813140869f, -0.4446113705635071f, 0.9762992262840271f, 0.21642504632472992f,
         3.1514840126037598f, 0.07432444393634796f},
        0.0f,
        true}});
  ExpectTrajectory(
      {-3.0, 0.1, -3.0, 0.0},
      {{0,
        {2.6943020878720287, 0.06514027126488933, -3.010558700972204, -0.2557486799072388},
        {-0.9016222953796387f, 0.4325242340564728f, 0.997879147529602f, 0.06509421020746231f,
         -3.010558605194092f, -0.2557486891746521f},
        0.0f,
        true}});
}

// From rest with theta2 = 0 and no torque, the start angle below lands the
// tip at height exactly 1.0 after one step (found by bisection in float64);
// the next double above it lands higher.
TEST(AcrobotTest, TerminatesOnlyWhenHeightIsStrictlyAboveOne) {
  constexpr double kExactlyOne = 2.1589893964169273;
  {
    Acrobot env;
    ResetTo(env, {kExactlyOne, 0.0, 0.0, 0.0});
    Obs obs;
    const StepResult r = env.Step(1, Bytes(obs));
    ASSERT_EQ(Height(env.state()), 1.0);
    EXPECT_FALSE(r.terminated);
    EXPECT_EQ(r.reward, -1.0f);
  }
  {
    Acrobot env;
    ResetTo(env, {std::nextafter(kExactlyOne, 3.0), 0.0, 0.0, 0.0});
    Obs obs;
    const StepResult r = env.Step(1, Bytes(obs));
    ASSERT_GT(Height(env.state()), 1.0);
    EXPECT_TRUE(r.terminated);
    EXPECT_EQ(r.reward, 0.0f);
  }
}

TEST(AcrobotTest, TerminatesExactlyWhenHeightExceedsOneOverRandomPlay) {
  Acrobot env;
  Obs obs;
  Rng actions(3);
  int terminations = 0;
  for (int episode = 0; episode < 20; ++episode) {
    env.Reset(episode, Bytes(obs));
    // Random starts across the whole state space reach the goal often.
    env.SetState({actions.Uniform(-pi, pi), actions.Uniform(-pi, pi), actions.Uniform(-5, 5),
                  actions.Uniform(-10, 10)});
    for (bool done = false; !done;) {
      const StepResult r = env.Step(static_cast<std::int64_t>(actions.Below(3)), Bytes(obs));
      ASSERT_EQ(r.terminated, Height(env.state()) > 1.0);
      ASSERT_EQ(r.reward, r.terminated ? 0.0f : -1.0f);
      terminations += r.terminated;
      done = r.terminated || r.truncated;
    }
  }
  EXPECT_GT(terminations, 5);
}

// Hanging at rest with no torque, the tip never rises.
TEST(AcrobotTest, TruncatesOnStep500AndNotBefore) {
  Acrobot env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  env.SetState({});
  for (int t = 1; t <= 500; ++t) {
    const StepResult r = env.Step(1, Bytes(obs));
    ASSERT_FALSE(r.terminated);
    ASSERT_EQ(r.reward, -1.0f);
    ASSERT_EQ(r.truncated, t == 500) << "step " << t;
  }
  EXPECT_TRUE(env.needs_reset());
}

TEST(AcrobotTest, SetsBothFlagsWhenTerminationCoincidesWithTimeLimit) {
  Acrobot env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  env.SetState({});
  for (int t = 1; t < 500; ++t) ASSERT_FALSE(env.Step(1, Bytes(obs)).truncated);
  env.SetState({3.0, 0.2, 3.0, 0.0});
  const StepResult r = env.Step(2, Bytes(obs));
  EXPECT_TRUE(r.terminated);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.reward, 0.0f);
}

TEST(AcrobotTest, DrawsFloat32InitialStateFromPlusMinusPointOneOverManySeeds) {
  Acrobot env;
  Obs obs;
  std::array<double, 4> lo, hi;
  lo.fill(1.0);
  hi.fill(-1.0);
  for (int seed = 0; seed < 4000; ++seed) {
    env.Reset(seed, Bytes(obs));
    const Acrobot::State& s = env.state();
    const std::array<double, 4> v = {s.theta1, s.theta2, s.dtheta1, s.dtheta2};
    for (int i = 0; i < 4; ++i) {
      // float32(U[-0.1, 0.1)) can round up onto float32(0.1).
      ASSERT_GE(v[i], static_cast<float>(-0.1));
      ASSERT_LE(v[i], static_cast<float>(0.1));
      // Gymnasium casts the initial state to float32.
      ASSERT_EQ(v[i], static_cast<float>(v[i]));
      lo[i] = std::min(lo[i], v[i]);
      hi[i] = std::max(hi[i], v[i]);
    }
    ASSERT_EQ(obs,
              (Obs{static_cast<float>(std::cos(s.theta1)), static_cast<float>(std::sin(s.theta1)),
                   static_cast<float>(std::cos(s.theta2)), static_cast<float>(std::sin(s.theta2)),
                   static_cast<float>(s.dtheta1), static_cast<float>(s.dtheta2)}));
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_LT(lo[i], -0.099) << i;
    EXPECT_GT(hi[i], 0.099) << i;
  }
}

std::vector<float> RecordEpisode(std::uint64_t seed) {
  Acrobot env(60);
  Obs obs;
  env.Reset(seed, Bytes(obs));
  std::vector<float> record(obs.begin(), obs.end());
  Rng actions(11);
  for (bool done = false; !done;) {
    const StepResult r = env.Step(static_cast<std::int64_t>(actions.Below(3)), Bytes(obs));
    record.insert(record.end(), obs.begin(), obs.end());
    record.push_back(r.reward);
    done = r.terminated || r.truncated;
  }
  env.Reset(std::nullopt, Bytes(obs));
  record.insert(record.end(), obs.begin(), obs.end());
  return record;
}

TEST(AcrobotTest, ReplaysTheSameEpisodeWhenGivenTheSameSeed) {
  const std::vector<float> a = RecordEpisode(42);
  EXPECT_EQ(a, RecordEpisode(42));
  EXPECT_EQ(a.size(), 6u + 60u * 7u + 6u);
  EXPECT_NE(a, RecordEpisode(43));
}

TEST(AcrobotTest, ThrowsFailedPreconditionWhenSteppedAfterTermination) {
  Acrobot env;
  Obs obs;
  EXPECT_THROW(env.Step(1, Bytes(obs)), FailedPrecondition);
  ResetTo(env, {3.0, 0.2, 3.0, 0.0});
  ASSERT_TRUE(env.Step(2, Bytes(obs)).terminated);
  EXPECT_THROW(env.Step(1, Bytes(obs)), FailedPrecondition);
  EXPECT_EQ(env.elapsed_steps(), 1);
}

TEST(AcrobotTest, RejectsBadActionWithoutChangingAnything) {
  Acrobot env;
  Obs obs;
  env.Reset(5, Bytes(obs));
  env.Step(2, Bytes(obs));
  const Acrobot::State before = env.state();
  Obs buffer;
  buffer.fill(-7.0f);
  const Obs sentinel = buffer;
  const float torque[1] = {1.0f};
  EXPECT_THROW(env.Step(-1, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(3, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(std::span<const float>(torque), Bytes(buffer)), InvalidArgument);
  EXPECT_EQ(buffer, sentinel);
  EXPECT_EQ(env.elapsed_steps(), 1);
  EXPECT_EQ(env.state().theta1, before.theta1);
  EXPECT_EQ(env.state().theta2, before.theta2);
  EXPECT_EQ(env.state().dtheta1, before.dtheta1);
  EXPECT_EQ(env.state().dtheta2, before.dtheta2);
  EXPECT_NO_THROW(env.Step(0, Bytes(buffer)));
}

}  // namespace
}  // namespace rlswarm::envs
