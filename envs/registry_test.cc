#include "envs/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

TEST(RegistryTest, ListsTheNineEnvironments) {
  const std::vector<std::string> expected = {
      "Acrobot-v1",      "CartPole-v1",      "MinAtar/Asterix",       "MinAtar/Breakout",
      "MinAtar/Freeway", "MinAtar/Seaquest", "MinAtar/SpaceInvaders", "MountainCar-v0",
      "Pendulum-v1"};
  EXPECT_EQ(EnvNames(), expected);
}

TEST(RegistryTest, EveryEnvHasAValidSpecAndRunsAnEpisodeStep) {
  for (const std::string& name : EnvNames()) {
    auto env = MakeEnv(name);
    EXPECT_EQ(env->spec().name, name);
    EXPECT_NO_THROW(env->spec().Validate());
    std::vector<std::byte> obs(env->spec().observation.NumBytes());
    env->Reset(1, obs);
    if (env->spec().action.kind == ActionKind::kDiscrete) {
      EXPECT_NO_THROW(env->Step(0, obs)) << name;
    } else {
      std::vector<float> a(env->spec().action.array.NumElements(), 0.0f);
      EXPECT_NO_THROW(env->Step(std::span<const float>(a), obs)) << name;
    }
  }
}

TEST(RegistryTest, EveryEnvReplaysTheSameEpisodesFromTheSameSeed) {
  for (const std::string& name : EnvNames()) {
    SCOPED_TRACE(name);
    auto a = MakeEnv(name);
    auto b = MakeEnv(name);
    const EnvSpec& spec = a->spec();
    std::vector<std::byte> obs_a(spec.observation.NumBytes()), obs_b(obs_a.size());
    a->Reset(42, obs_a);
    b->Reset(42, obs_b);
    ASSERT_EQ(obs_a, obs_b);
    Rng actions(7);
    int episodes = 0;
    for (int t = 0; t < 3000; ++t) {
      StepResult ra, rb;
      if (spec.action.kind == ActionKind::kDiscrete) {
        const auto action = static_cast<std::int64_t>(actions.Below(spec.action.num_actions));
        ra = a->Step(action, obs_a);
        rb = b->Step(action, obs_b);
      } else {
        const float action[1] = {static_cast<float>(actions.Uniform(-2.0, 2.0))};
        ra = a->Step(std::span<const float>(action), obs_a);
        rb = b->Step(std::span<const float>(action), obs_b);
      }
      ASSERT_EQ(ra.reward, rb.reward) << t;
      ASSERT_EQ(ra.terminated, rb.terminated) << t;
      ASSERT_EQ(ra.truncated, rb.truncated) << t;
      ASSERT_EQ(obs_a, obs_b) << t;
      if (ra.terminated || ra.truncated) {
        a->Reset(std::nullopt, obs_a);  // later episodes continue the stream
        b->Reset(std::nullopt, obs_b);
        ASSERT_EQ(obs_a, obs_b);
        ++episodes;
      }
    }
    EXPECT_GE(episodes, 1);
  }
}

TEST(RegistryTest, UnknownNameIsNotFoundAndListsTheKnownNames) {
  try {
    MakeEnv("CartPole-v0");
    FAIL() << "no exception";
  } catch (const NotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CartPole-v0"), std::string::npos);
    EXPECT_NE(msg.find("CartPole-v1"), std::string::npos);
    EXPECT_NE(msg.find("MinAtar/Seaquest"), std::string::npos);
  }
}

TEST(RegistryTest, MinAtarOptionsAreRejectedForClassicEnvs) {
  EnvOptions o;
  o.sticky_action_prob = 0.0;
  EXPECT_THROW(MakeEnv("CartPole-v1", o), InvalidArgument);
  EXPECT_NO_THROW(MakeEnv("MinAtar/Breakout", o));
}

TEST(RegistryTest, OptionsChangeTheSpec) {
  EnvOptions o;
  o.max_episode_steps = 7;
  EXPECT_EQ(MakeEnv("CartPole-v1", o)->spec().max_episode_steps, 7);
  EXPECT_EQ(MakeEnv("CartPole-v1")->spec().max_episode_steps, 500);
  EXPECT_EQ(MakeEnv("MinAtar/Breakout")->spec().action.num_actions, 6);
  o.minimal_action_set = true;
  EXPECT_EQ(MakeEnv("MinAtar/Breakout", o)->spec().action.num_actions, 3);
  EXPECT_EQ(MakeEnv("MinAtar/Breakout", o)->spec().max_episode_steps, 7);
}

TEST(RegistryTest, OutOfRangeOptionsAreInvalid) {
  EnvOptions o;
  o.sticky_action_prob = 1.5;
  EXPECT_THROW(MakeEnv("MinAtar/Freeway", o), InvalidArgument);
  EnvOptions negative;
  negative.max_episode_steps = -1;
  EXPECT_THROW(MakeEnv("Acrobot-v1", negative), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::envs
