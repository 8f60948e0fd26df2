#include "envs/classic/mountain_car.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

using Obs = std::array<float, 2>;

std::span<std::byte> Bytes(Obs& obs) { return std::as_writable_bytes(std::span(obs)); }

void ResetTo(MountainCar& env, const MountainCar::State& state) {
  Obs obs;
  env.Reset(0, Bytes(obs));
  env.SetState(state);
}

// One step from `start`; returns the result and leaves the env for inspection.
StepResult StepFrom(MountainCar& env, const MountainCar::State& start, std::int64_t action,
                    Obs* obs) {
  ResetTo(env, start);
  return env.Step(action, Bytes(*obs));
}

TEST(MountainCarTest, HasGymnasiumSpecWhenDefaultConstructed) {
  MountainCar env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.name, "MountainCar-v0");
  EXPECT_EQ(spec.max_episode_steps, 200);
  EXPECT_EQ(spec.observation.shape, std::vector<std::int64_t>{2});
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  // The float32 roundings of [-1.2, -0.07] and [0.6, 0.07], as in Gymnasium's Box.
  EXPECT_EQ(spec.observation.low, (std::vector<double>{-1.2000000476837158, -0.07000000029802322}));
  EXPECT_EQ(spec.observation.high, (std::vector<double>{0.6000000238418579, 0.07000000029802322}));
  EXPECT_EQ(spec.action.kind, ActionKind::kDiscrete);
  EXPECT_EQ(spec.action.num_actions, 3);
  EXPECT_EQ(MountainCar(0).spec().max_episode_steps, 0);
}

// Expected values: Gymnasium's step() evaluated in float64 by an independent
// script, observations rounded to float32.
TEST(MountainCarTest, FollowsGymnasiumDynamicsWhenStartedFromFixedState) {
  struct Expected {
    std::int64_t action;
    MountainCar::State state;
    Obs obs;
  };
  const std::vector<Expected> steps = {
      {2,
       {-0.49917684300416926, 0.0008231569958307428},
       {-0.49917683005332947f, 0.0008231570245698094f}},
      {2,
       {-0.49753668667935325, 0.0016401563248160246},
       {-0.49753668904304504f, 0.001640156377106905f}},
      {0,
       {-0.4970917969323474, 0.00044488974700586273},
       {-0.49709179997444153f, 0.00044488973799161613f}},
      {1,
       {-0.49684550006784745, 0.0002462968644999427},
       {-0.4968455135822296f, 0.0002462968695908785f}},
  };
  MountainCar env;
  ResetTo(env, {-0.5, 0.0});
  for (const Expected& want : steps) {
    Obs obs;
    const StepResult r = env.Step(want.action, Bytes(obs));
    EXPECT_NEAR(env.state().position, want.state.position, 1e-15);
    EXPECT_NEAR(env.state().velocity, want.state.velocity, 1e-15);
    EXPECT_FLOAT_EQ(obs[0], want.obs[0]);
    EXPECT_FLOAT_EQ(obs[1], want.obs[1]);
    EXPECT_EQ(r.reward, -1.0f);
    EXPECT_FALSE(r.terminated);
  }
}

TEST(MountainCarTest, StopsCarWhenItHitsTheLeftWall) {
  MountainCar env;
  Obs obs;
  StepFrom(env, {-1.19, -0.05}, 0, &obs);
  EXPECT_EQ(env.state().position, -1.2);
  EXPECT_EQ(env.state().velocity, 0.0);
  EXPECT_EQ(obs, (Obs{static_cast<float>(-1.2), 0.0f}));
  // At the wall but moving right: the velocity is kept.
  StepFrom(env, {-1.2, 0.0}, 2, &obs);
  EXPECT_GT(env.state().velocity, 0.0);
  EXPECT_GT(env.state().position, -1.2);
}

TEST(MountainCarTest, ClipsVelocityToPlusMinus007) {
  MountainCar env;
  Obs obs;
  StepFrom(env, {-0.5, 0.0699}, 2, &obs);
  EXPECT_EQ(env.state().velocity, 0.07);
  EXPECT_NEAR(env.state().position, -0.43, 1e-15);
  EXPECT_FLOAT_EQ(obs[1], 0.07f);
  // Mirror image: cos(3 * -0.5) pulls left too, so -0.0699 - 0.001 - ... clips.
  StepFrom(env, {-0.5, -0.0699}, 0, &obs);
  EXPECT_EQ(env.state().velocity, -0.07);
}

// p0 below was found (in float64, Gymnasium's order) so that one step with
// velocity 0.01 and no push lands on position exactly 0.5.
TEST(MountainCarTest, TerminatesWhenPositionReachesExactlyTheGoal) {
  constexpr double kLandsOnGoal = 0.4902497010109387;
  MountainCar env;
  Obs obs;
  StepResult r = StepFrom(env, {kLandsOnGoal, 0.01}, 1, &obs);
  ASSERT_EQ(env.state().position, 0.5);
  EXPECT_GT(env.state().velocity, 0.0);
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.reward, -1.0f);

  r = StepFrom(env, {std::nextafter(kLandsOnGoal, 0.0), 0.01}, 1, &obs);
  ASSERT_LT(env.state().position, 0.5);
  EXPECT_FALSE(r.terminated);
}

TEST(MountainCarTest, TerminatesAtGoalOnlyWhenVelocityIsNotNegative) {
  // With no push, velocity v0 = -gravity_term makes the new velocity exactly 0.
  constexpr double kPosition = 0.55;
  const double gravity_term = std::cos(3 * kPosition) * -0.0025;
  MountainCar env;
  Obs obs;
  StepResult r = StepFrom(env, {kPosition, -gravity_term}, 1, &obs);
  ASSERT_EQ(env.state().velocity, 0.0);
  EXPECT_EQ(env.state().position, kPosition);
  EXPECT_TRUE(r.terminated);

  r = StepFrom(env, {kPosition, std::nextafter(-gravity_term, -1.0)}, 1, &obs);
  ASSERT_LT(env.state().velocity, 0.0);
  EXPECT_GE(env.state().position, 0.5);
  EXPECT_FALSE(r.terminated);
}

TEST(MountainCarTest, TruncatesOnStep200AndNotBefore) {
  MountainCar env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  for (int t = 1; t <= 200; ++t) {
    const StepResult r = env.Step(1, Bytes(obs));  // no push never escapes the valley
    ASSERT_FALSE(r.terminated);
    ASSERT_EQ(r.reward, -1.0f);
    ASSERT_EQ(r.truncated, t == 200) << "step " << t;
  }
  EXPECT_THROW(env.Step(1, Bytes(obs)), FailedPrecondition);
}

TEST(MountainCarTest, SetsBothFlagsWhenTerminationCoincidesWithTimeLimit) {
  MountainCar env;
  Obs obs;
  env.Reset(1, Bytes(obs));
  for (int t = 1; t < 200; ++t) ASSERT_FALSE(env.Step(1, Bytes(obs)).truncated);
  env.SetState({0.55, 0.01});
  const StepResult r = env.Step(2, Bytes(obs));
  EXPECT_TRUE(r.terminated);
  EXPECT_TRUE(r.truncated);
}

TEST(MountainCarTest, ReachesGoalWhenPushedWithTheVelocity) {
  // A bang-bang policy that pushes along the velocity climbs out of the
  // valley in about 100 steps, exercising the whole track.
  MountainCar env;
  Obs obs;
  env.Reset(7, Bytes(obs));
  StepResult r;
  int steps = 0;
  do {
    r = env.Step(env.state().velocity < 0 ? 0 : 2, Bytes(obs));
    ++steps;
  } while (!r.terminated && !r.truncated);
  EXPECT_TRUE(r.terminated);
  EXPECT_GE(env.state().position, 0.5);
  EXPECT_LT(steps, 200);
}

TEST(MountainCarTest, DrawsInitialPositionFromMinus06ToMinus04WithZeroVelocity) {
  MountainCar env;
  Obs obs;
  double lo = 0.0, hi = -1.0;
  for (int seed = 0; seed < 4000; ++seed) {
    env.Reset(seed, Bytes(obs));
    const MountainCar::State& s = env.state();
    ASSERT_GE(s.position, -0.6);
    ASSERT_LT(s.position, -0.4);
    ASSERT_EQ(s.velocity, 0.0);
    ASSERT_EQ(obs, (Obs{static_cast<float>(s.position), 0.0f}));
    lo = std::min(lo, s.position);
    hi = std::max(hi, s.position);
  }
  EXPECT_LT(lo, -0.599);
  EXPECT_GT(hi, -0.401);
}

std::vector<float> RecordEpisode(std::uint64_t seed) {
  MountainCar env;
  Obs obs;
  env.Reset(seed, Bytes(obs));
  std::vector<float> record(obs.begin(), obs.end());
  Rng actions(5);
  for (bool done = false; !done;) {
    const StepResult r = env.Step(static_cast<std::int64_t>(actions.Below(3)), Bytes(obs));
    record.insert(record.end(), obs.begin(), obs.end());
    done = r.terminated || r.truncated;
  }
  env.Reset(std::nullopt, Bytes(obs));
  record.insert(record.end(), obs.begin(), obs.end());
  return record;
}

TEST(MountainCarTest, ReplaysTheSameEpisodeWhenGivenTheSameSeed) {
  const std::vector<float> a = RecordEpisode(42);
  EXPECT_EQ(a, RecordEpisode(42));
  EXPECT_EQ(a.size(), 2u + 200u * 2u + 2u);
  EXPECT_NE(a, RecordEpisode(43));
}

TEST(MountainCarTest, ThrowsFailedPreconditionWhenSteppedAfterTermination) {
  MountainCar env;
  Obs obs;
  EXPECT_THROW(env.Step(1, Bytes(obs)), FailedPrecondition);
  ASSERT_TRUE(StepFrom(env, {0.55, 0.01}, 2, &obs).terminated);
  EXPECT_THROW(env.Step(1, Bytes(obs)), FailedPrecondition);
}

TEST(MountainCarTest, RejectsBadActionWithoutChangingAnything) {
  MountainCar env;
  Obs obs;
  env.Reset(5, Bytes(obs));
  env.Step(2, Bytes(obs));
  const MountainCar::State before = env.state();
  Obs buffer = {-7.0f, -7.0f};
  const float push[1] = {1.0f};
  EXPECT_THROW(env.Step(-1, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(3, Bytes(buffer)), InvalidArgument);
  EXPECT_THROW(env.Step(std::span<const float>(push), Bytes(buffer)), InvalidArgument);
  EXPECT_EQ(buffer, (Obs{-7.0f, -7.0f}));
  EXPECT_EQ(env.elapsed_steps(), 1);
  EXPECT_EQ(env.state().position, before.position);
  EXPECT_EQ(env.state().velocity, before.velocity);
  EXPECT_NO_THROW(env.Step(1, Bytes(buffer)));
}

}  // namespace
}  // namespace rlswarm::envs
