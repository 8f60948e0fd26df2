#include "envs/classic/cartpole.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

using Obs = std::array<float, 4>;

std::span<std::byte> Bytes(Obs& obs) { return std::as_writable_bytes(std::span(obs)); }

// 12 * 2 * pi / 360 evaluated in float64 in Gymnasium's order.
constexpr double kThetaThreshold = 0.20943951023931953;

void ExpectStateNear(const CartPole::State& got, const CartPole::State& want) {
  EXPECT_NEAR(got.x, want.x, 1e-12);
  EXPECT_NEAR(got.x_dot, want.x_dot, 1e-12);
  EXPECT_NEAR(got.theta, want.theta, 1e-12);
  EXPECT_NEAR(got.theta_dot, want.theta_dot, 1e-12);
}

// A fresh episode placed in `state`.
void ResetTo(CartPole& env, const CartPole::State& state) {
  Obs obs;
  env.Reset(0, Bytes(obs));
  env.SetState(state);
}

TEST(CartPoleTest, HasGymnasiumSpecWhenDefaultConstructed) {
  CartPole env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.name, "CartPole-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_EQ(spec.observation.shape, std::vector<std::int64_t>{4});
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // float32(4.8) and float32(2 * 12 degrees), as in Gymnasium's float32 Box.
  EXPECT_EQ(spec.observation.high,
            (std::vector<double>{4.800000190734863, kInf, 0.41887903213500977, kInf}));
  EXPECT_EQ(spec.observation.low,
            (std::vector<double>{-4.800000190734863, -kInf, -0.41887903213500977, -kInf}));
  EXPECT_EQ(spec.action.kind, ActionKind::kDiscrete);
  EXPECT_EQ(spec.action.num_actions, 2);
  EXPECT_EQ(CartPole(0).spec().max_episode_steps, 0);
  EXPECT_EQ(CartPole(7).spec().max_episode_steps, 7);
}

// Expected values: Gymnasium's step() equations evaluated in float64 by an
// independent script, observations rounded to float32.
TEST(CartPoleTest, FollowsGymnasiumEulerDynamicsWhenStartedFromFixedState) {
  struct Step {
    std::int64_t action;
    CartPole::State state;
    Obs obs;
  };
  const std::vector<std::pair<CartPole::State, std::vector<Step>>> trajectories = {
      {{0.01, -0.02, 0.03, 0.04},
       {{1,
         {0.009600000000000001, 0.17467919574755525, 0.030799999999999998, -0.2430687179600081},
         {0.009600000455975533f, 0.17467918992042542f, 0.030799999833106995f,
          -0.24306872487068176f}},
        {0,
         {0.013093583914951107, -0.020868848948191993, 0.025938625640799837, 0.0591679999394166},
         {0.013093584217131138f, -0.020868849009275436f, 0.025938626378774643f,
          0.059167999774217606f}},
        {1,
         {0.012676206935987267, 0.1738717748734813, 0.02712198563958817, -0.22521957255967326},
         {0.012676207348704338f, 0.17387177050113678f, 0.02712198533117771f,
          -0.22521957755088806f}},
        {1,
         {0.016153642433456895, 0.36859581150093934, 0.022617594188394704, -0.509225318312219},
         {0.016153642907738686f, 0.36859580874443054f, 0.02261759340763092f, -0.5092253088951111f}},
        {0,
         {0.023525558663475683, 0.17316263692575581, 0.012433087822150324, -0.20950152868114708},
         {0.023525558412075043f, 0.17316263914108276f, 0.012433087453246117f,
          -0.20950153470039368f}}}},
      {{0.5, 1.0, -0.1, -1.5},
       {{0,
         {0.52, 0.8062248214490841, -0.13, -1.240140359815686},
         {0.5199999809265137f, 0.8062248229980469f, -0.12999999523162842f, -1.2401403188705444f}},
        {1,
         {0.5361244964289817, 1.002754061224481, -0.15480280719631373, -1.5705591554889065},
         {0.5361244678497314f, 1.0027540922164917f, -0.1548028141260147f, -1.5705591440200806f}},
        {0,
         {0.5561795776534714, 0.8097815390776911, -0.18621399030609187, -1.329892202305957},
         {0.5561795830726624f, 0.809781551361084f, -0.18621398508548737f, -1.3298921585083008f}}}},
  };
  for (const auto& [start, steps] : trajectories) {
    CartPole env;
    ResetTo(env, start);
    for (const Step& want : steps) {
      Obs obs;
      const StepResult r = env.Step(want.action, Bytes(obs));
      ExpectStateNear(env.state(), want.state);
      for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(obs[i], want.obs[i]) << "element " << i;
      EXPECT_EQ(r.reward, 1.0f);
      EXPECT_FALSE(r.terminated);
      EXPECT_FALSE(r.truncated);
    }
  }
}

TEST(CartPoleTest, ObservesStateRoundedToFloat32WhenReset) {
  CartPole env;
  Obs obs;
  env.Reset(123, Bytes(obs));
  const CartPole::State& s = env.state();
  EXPECT_EQ(obs, (Obs{static_cast<float>(s.x), static_cast<float>(s.x_dot),
                      static_cast<float>(s.theta), static_cast<float>(s.theta_dot)}));
  Obs again;
  env.Observe(Bytes(again));
  EXPECT_EQ(again, obs);
}

// With zero velocities, one Euler step leaves x and theta exactly where they
// were, so the termination test sees exactly the values placed here.
TEST(CartPoleTest, TerminatesOnlyWhenCartIsStrictlyOutsidePlusMinus2point4) {
  for (double x : {2.4, -2.4, 1.0, 0.0}) {
    CartPole env;
    ResetTo(env, {x, 0.0, 0.0, 0.0});
    Obs obs;
    EXPECT_FALSE(env.Step(1, Bytes(obs)).terminated) << x;
    EXPECT_EQ(env.state().x, x);
  }
  for (double x : {std::nextafter(2.4, 3.0), std::nextafter(-2.4, -3.0), 3.0, -4.0}) {
    CartPole env;
    ResetTo(env, {x, 0.0, 0.0, 0.0});
    Obs obs;
    const StepResult r = env.Step(0, Bytes(obs));
    EXPECT_TRUE(r.terminated) << x;
    EXPECT_FALSE(r.truncated);
    EXPECT_EQ(r.reward, 1.0f);  // Gymnasium rewards the terminating step too
    EXPECT_TRUE(env.needs_reset());
  }
}

TEST(CartPoleTest, TerminatesOnlyWhenPoleIsStrictlyBeyondTwelveDegrees) {
  for (double theta : {kThetaThreshold, -kThetaThreshold, 0.2}) {
    CartPole env;
    ResetTo(env, {0.0, 0.0, theta, 0.0});
    Obs obs;
    EXPECT_FALSE(env.Step(1, Bytes(obs)).terminated) << theta;
    EXPECT_EQ(env.state().theta, theta);
  }
  for (double theta :
       {std::nextafter(kThetaThreshold, 1.0), std::nextafter(-kThetaThreshold, -1.0), 0.3}) {
    CartPole env;
    ResetTo(env, {0.0, 0.0, theta, 0.0});
    Obs obs;
    const StepResult r = env.Step(1, Bytes(obs));
    EXPECT_TRUE(r.terminated) << theta;
    EXPECT_EQ(r.reward, 1.0f);
  }
}

// Placing the cart at rest before every step keeps the episode alive for as
// long as the test needs.
TEST(CartPoleTest, TruncatesOnStep500AndNotBefore) {
  CartPole env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  for (int t = 1; t <= 500; ++t) {
    env.SetState({});
    const StepResult r = env.Step(t % 2, Bytes(obs));
    ASSERT_FALSE(r.terminated);
    ASSERT_EQ(r.truncated, t == 500) << "step " << t;
    ASSERT_EQ(env.elapsed_steps(), t);
  }
  EXPECT_TRUE(env.needs_reset());
  EXPECT_THROW(env.Step(0, Bytes(obs)), FailedPrecondition);
}

TEST(CartPoleTest, SetsBothFlagsWhenTerminationCoincidesWithTimeLimit) {
  CartPole env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  for (int t = 1; t < 500; ++t) {
    env.SetState({});
    ASSERT_FALSE(env.Step(0, Bytes(obs)).truncated);
  }
  env.SetState({3.0, 0.0, 0.0, 0.0});
  const StepResult r = env.Step(0, Bytes(obs));
  EXPECT_TRUE(r.terminated);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.reward, 1.0f);
}

TEST(CartPoleTest, NeverTruncatesWhenMaxEpisodeStepsIsZero) {
  CartPole env(0);
  Obs obs;
  env.Reset(1, Bytes(obs));
  for (int t = 1; t <= 2000; ++t) {
    env.SetState({});
    ASSERT_FALSE(env.Step(1, Bytes(obs)).truncated) << "step " << t;
  }
}

TEST(CartPoleTest, TruncatesAtGivenLimitWhenConstructedWithMaxEpisodeSteps) {
  CartPole env(3);
  Obs obs;
  env.Reset(1, Bytes(obs));
  env.SetState({});
  EXPECT_FALSE(env.Step(1, Bytes(obs)).truncated);
  env.SetState({});
  EXPECT_FALSE(env.Step(1, Bytes(obs)).truncated);
  env.SetState({});
  EXPECT_TRUE(env.Step(1, Bytes(obs)).truncated);
}

TEST(CartPoleTest, DrawsInitialStateUniformlyFromPlusMinus005OverManySeeds) {
  CartPole env;
  Obs obs;
  std::array<double, 4> lo, hi, sum{};
  lo.fill(1.0);
  hi.fill(-1.0);
  constexpr int kSeeds = 4000;
  for (int seed = 0; seed < kSeeds; ++seed) {
    env.Reset(seed, Bytes(obs));
    const CartPole::State& s = env.state();
    const std::array<double, 4> v = {s.x, s.x_dot, s.theta, s.theta_dot};
    for (int i = 0; i < 4; ++i) {
      ASSERT_GE(v[i], -0.05);
      ASSERT_LT(v[i], 0.05);
      lo[i] = std::min(lo[i], v[i]);
      hi[i] = std::max(hi[i], v[i]);
      sum[i] += v[i];
    }
  }
  for (int i = 0; i < 4; ++i) {
    // The whole range is covered, and the draws centre on 0 (the standard
    // error of the mean is 0.0289 / sqrt(4000) = 0.00046).
    EXPECT_LT(lo[i], -0.049) << i;
    EXPECT_GT(hi[i], 0.049) << i;
    EXPECT_NEAR(sum[i] / kSeeds, 0.0, 0.0025) << i;
  }
}

// Runs one seeded episode with a fixed action pattern and records everything.
std::vector<float> RecordEpisode(std::uint64_t seed) {
  CartPole env;
  Obs obs;
  env.Reset(seed, Bytes(obs));
  std::vector<float> record(obs.begin(), obs.end());
  Rng actions(99);
  for (bool done = false; !done;) {
    const StepResult r = env.Step(static_cast<std::int64_t>(actions.Below(2)), Bytes(obs));
    record.insert(record.end(), obs.begin(), obs.end());
    record.push_back(r.reward);
    record.push_back(r.terminated);
    done = r.terminated || r.truncated;
  }
  // A second episode without a seed continues the seeded stream.
  env.Reset(std::nullopt, Bytes(obs));
  record.insert(record.end(), obs.begin(), obs.end());
  return record;
}

TEST(CartPoleTest, ReplaysTheSameEpisodeWhenGivenTheSameSeed) {
  const std::vector<float> a = RecordEpisode(42);
  EXPECT_EQ(a, RecordEpisode(42));
  EXPECT_GT(a.size(), 4u + 6u * 5u);  // several steps happened
  const std::vector<float> b = RecordEpisode(43);
  EXPECT_NE(std::vector<float>(a.begin(), a.begin() + 4),
            std::vector<float>(b.begin(), b.begin() + 4));
}

TEST(CartPoleTest, ThrowsFailedPreconditionWhenSteppedBeforeResetOrAfterTermination) {
  CartPole env;
  Obs obs;
  EXPECT_THROW(env.Step(0, Bytes(obs)), FailedPrecondition);
  ResetTo(env, {3.0, 0.0, 0.0, 0.0});
  ASSERT_TRUE(env.Step(0, Bytes(obs)).terminated);
  const CartPole::State before = env.state();
  EXPECT_THROW(env.Step(0, Bytes(obs)), FailedPrecondition);
  EXPECT_EQ(env.state().x, before.x);
  EXPECT_EQ(env.elapsed_steps(), 1);
  env.Reset(std::nullopt, Bytes(obs));  // and a Reset makes it steppable again
  EXPECT_NO_THROW(env.Step(0, Bytes(obs)));
}

TEST(CartPoleTest, RejectsBadActionWithoutChangingAnything) {
  CartPole env;
  Obs obs;
  env.Reset(5, Bytes(obs));
  env.Step(1, Bytes(obs));
  const CartPole::State before = env.state();
  const float torque[1] = {0.5f};
  Obs sentinel;
  sentinel.fill(-7.0f);
  Obs buffer = sentinel;
  EXPECT_THROW(env.Step(-1, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(2, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(std::span<const float>(torque), Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(0, Bytes(buffer).first(15)), InvalidArgument);  // short buffer
  EXPECT_EQ(buffer, sentinel);
  EXPECT_EQ(env.elapsed_steps(), 1);
  EXPECT_FALSE(env.needs_reset());
  EXPECT_EQ(env.state().x, before.x);
  EXPECT_EQ(env.state().x_dot, before.x_dot);
  EXPECT_EQ(env.state().theta, before.theta);
  EXPECT_EQ(env.state().theta_dot, before.theta_dot);
  EXPECT_NO_THROW(env.Step(0, Bytes(buffer)));
  EXPECT_EQ(env.elapsed_steps(), 2);
}

}  // namespace
}  // namespace rlswarm::envs
