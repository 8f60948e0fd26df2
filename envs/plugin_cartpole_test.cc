// The C CartPole of examples/plugin_env/ (built by its own CMakeLists against
// the copied plugin header) against the built-in CartPole-v1: the same spec,
// and, since it uses the same generator and arithmetic, the same episodes
// bit for bit from the same seeds and actions.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/random.h"
#include "envs/registry.h"
#include "envs/vector_env.h"

namespace rlswarm::envs {
namespace {

const std::string kCartPolePlugin = std::string("plugin:") + RLSWARM_CARTPOLE_PLUGIN;

TEST(PluginCartPoleTest, HasTheSpecOfTheBuiltIn) {
  const EnvSpec plugin = MakeEnv(kCartPolePlugin)->spec();
  const EnvSpec builtin = MakeEnv("CartPole-v1")->spec();
  EXPECT_EQ(plugin.name, builtin.name);
  EXPECT_EQ(plugin.observation.shape, builtin.observation.shape);
  EXPECT_EQ(plugin.observation.dtype, builtin.observation.dtype);
  EXPECT_EQ(plugin.observation.low, builtin.observation.low);
  EXPECT_EQ(plugin.observation.high, builtin.observation.high);
  EXPECT_EQ(plugin.action.kind, builtin.action.kind);
  EXPECT_EQ(plugin.action.num_actions, builtin.action.num_actions);
  EXPECT_EQ(plugin.action.array.low, builtin.action.array.low);
  EXPECT_EQ(plugin.action.array.high, builtin.action.array.high);
  EXPECT_EQ(plugin.max_episode_steps, builtin.max_episode_steps);
  EXPECT_EQ(MakeEnv(kCartPolePlugin + ":CartPole-v1")->spec().name, "CartPole-v1");
}

TEST(PluginCartPoleTest, StepsAsTheBuiltInFromTheSameSeedsAndActions) {
  auto plugin = MakeEnv(kCartPolePlugin);
  auto builtin = MakeEnv("CartPole-v1");
  std::vector<std::byte> obs_p(16), obs_b(16);
  Rng actions(3);
  int episodes = 0;
  plugin->Reset(11, obs_p);
  builtin->Reset(11, obs_b);
  ASSERT_EQ(obs_p, obs_b);
  for (int t = 0; t < 20000; ++t) {
    const auto action = static_cast<std::int64_t>(actions.Below(2));
    const StepResult rp = plugin->Step(action, obs_p);
    const StepResult rb = builtin->Step(action, obs_b);
    ASSERT_EQ(obs_p, obs_b) << "step " << t;
    ASSERT_EQ(rp.reward, rb.reward) << t;
    ASSERT_EQ(rp.terminated, rb.terminated) << t;
    ASSERT_EQ(rp.truncated, rb.truncated) << t;
    if (rp.terminated || rp.truncated) {
      // Every other episode seeded, the others continue the stream.
      const std::optional<std::uint64_t> seed =
          ++episodes % 2 ? std::optional<std::uint64_t>(episodes) : std::nullopt;
      plugin->Reset(seed, obs_p);
      builtin->Reset(seed, obs_b);
      ASSERT_EQ(obs_p, obs_b) << "reset after step " << t;
    }
  }
  EXPECT_GT(episodes, 500);
}

TEST(PluginCartPoleTest, AVectorEnvOfThePluginMatchesTheBuiltInWithAutoReset) {
  VectorEnvOptions o;
  o.num_envs = 16;
  o.num_threads = 2;
  VectorEnv plugin(kCartPolePlugin, o);
  VectorEnv builtin("CartPole-v1", o);
  plugin.Reset(5);
  builtin.Reset(5);
  Rng rng(9);
  std::int64_t episodes = 0;
  for (int t = 0; t < 3000; ++t) {
    std::vector<std::int64_t> actions(16);
    for (auto& a : actions) a = static_cast<std::int64_t>(rng.Below(2));
    plugin.Step(actions);
    builtin.Step(actions);
    ASSERT_EQ(0, std::memcmp(plugin.observations(), builtin.observations(), 16 * 16)) << t;
    ASSERT_EQ(0, std::memcmp(plugin.final_observations(), builtin.final_observations(), 16 * 16));
    ASSERT_EQ(0, std::memcmp(plugin.terminated(), builtin.terminated(), 16));
    ASSERT_EQ(0, std::memcmp(plugin.truncated(), builtin.truncated(), 16));
    for (int i = 0; i < 16; ++i) episodes += plugin.done(i);
  }
  EXPECT_GT(episodes, 1000);
}

}  // namespace
}  // namespace rlswarm::envs
