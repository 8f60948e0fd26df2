// PluginEnv against real shared libraries (dlopen): the test plugin of
// envs/testing/test_plugin.cc, good envs and every refusal.

#include "envs/plugin_env.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "envs/plugin_library.h"
#include "envs/registry.h"
#include "envs/vector_env.h"

namespace rlswarm::envs {
namespace {

namespace fs = std::filesystem;

const std::string kPlugin = std::string("plugin:") + RLSWARM_TEST_PLUGIN;

std::string Named(const std::string& name) { return kPlugin + ":" + name; }

EnvOptions Kwargs(const std::string& json) {
  EnvOptions o;
  o.kwargs_json = json;
  return o;
}

// Envs the test plugin has created and not destroyed.
int LiveEnvs() {
  void* handle = dlopen(RLSWARM_TEST_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return 0;  // not loaded yet: none
  auto count = reinterpret_cast<int (*)()>(dlsym(handle, "rlswarm_test_plugin_live_envs"));
  const int live = count ? count() : -1;
  dlclose(handle);  // only drops the reference NOLOAD took
  return live;
}

std::vector<float> Floats(const std::vector<std::byte>& bytes) {
  std::vector<float> f(bytes.size() / sizeof(float));
  std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
  return f;
}

// Expects `make` to throw E with every one of `parts` in its message.
template <class E>
void ExpectError(const std::function<void()>& make, const std::vector<std::string>& parts) {
  try {
    make();
    ADD_FAILURE() << "no exception; expected one saying " << parts.front();
  } catch (const E& e) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << e.what() << "' lacks '" << part << "'";
    }
  }
}

TEST(PluginAddressTest, SplitsPathAndName) {
  EXPECT_EQ(ParsePluginAddress("lib/x.so").path, "lib/x.so");
  EXPECT_FALSE(ParsePluginAddress("lib/x.so").name);
  EXPECT_EQ(ParsePluginAddress("lib/x.so:CartPole").path, "lib/x.so");
  EXPECT_EQ(*ParsePluginAddress("lib/x.so:CartPole").name, "CartPole");
  // A ':' with a '/' after it belongs to the path.
  EXPECT_EQ(ParsePluginAddress("/opt/a:b/x.so").path, "/opt/a:b/x.so");
  EXPECT_FALSE(ParsePluginAddress("/opt/a:b/x.so").name);
  EXPECT_THROW(ParsePluginAddress(""), InvalidArgument);
  EXPECT_THROW(ParsePluginAddress(":name"), InvalidArgument);
  EXPECT_THROW(ParsePluginAddress("x.so:"), InvalidArgument);
}

TEST(PluginEnvTest, TheDefaultEnvAndNamedEnvsHaveTheirSpecs) {
  const EnvSpec counter = MakeEnv(kPlugin)->spec();
  EXPECT_EQ(counter.name, "counter");
  EXPECT_EQ(counter.observation.shape, std::vector<std::int64_t>{3});
  EXPECT_EQ(counter.observation.dtype, DType::kFloat32);
  EXPECT_EQ(counter.observation.low, std::vector<double>{-1e9});
  EXPECT_EQ(counter.action.kind, ActionKind::kDiscrete);
  EXPECT_EQ(counter.action.num_actions, 3);
  EXPECT_EQ(counter.max_episode_steps, 10);
  EXPECT_EQ(MakeEnv(Named("counter"))->spec().name, "counter");
  EXPECT_EQ(DescribeEnv(kPlugin).name, "counter");

  // No bounds given: the dtype's range.
  const EnvSpec image = MakeEnv(Named("image"))->spec();
  EXPECT_EQ(image.observation.shape, (std::vector<std::int64_t>{3, 4, 4}));
  EXPECT_EQ(image.observation.dtype, DType::kUInt8);
  EXPECT_EQ(image.observation.low, std::vector<double>{0});
  EXPECT_EQ(image.observation.high, std::vector<double>{255});
  EXPECT_EQ(image.max_episode_steps, 0);

  const EnvSpec continuous = MakeEnv(Named("continuous"))->spec();
  EXPECT_EQ(continuous.action.kind, ActionKind::kContinuous);
  EXPECT_EQ(continuous.action.array.shape, std::vector<std::int64_t>{2});
  EXPECT_EQ(continuous.action.array.dtype, DType::kFloat32);
  EXPECT_EQ(continuous.action.array.low, (std::vector<double>{-1, 0}));
  EXPECT_EQ(continuous.action.array.high, (std::vector<double>{1, 2}));
  EXPECT_EQ(continuous.observation.dtype, DType::kFloat64);
  EXPECT_TRUE(std::isinf(continuous.observation.high[0]));
}

TEST(PluginEnvTest, KwargsReachCreateAndMaxEpisodeStepsOverridesTheSpec) {
  const EnvSpec spec =
      MakeEnv(kPlugin, Kwargs(R"({"size": 5, "max_episode_steps": 4, "name": "renamed"})"))->spec();
  EXPECT_EQ(spec.name, "renamed");
  EXPECT_EQ(spec.observation.shape, std::vector<std::int64_t>{5});
  EXPECT_EQ(spec.max_episode_steps, 4);
  EnvOptions o = Kwargs(R"({"max_episode_steps": 4})");
  o.max_episode_steps = 0;
  EXPECT_EQ(MakeEnv(kPlugin, o)->spec().max_episode_steps, 0);
  // "" and "{}" both mean no config.
  EXPECT_EQ(MakeEnv(kPlugin, Kwargs(""))->spec().observation.shape[0], 3);
  EXPECT_EQ(MakeEnv(kPlugin, Kwargs("{}"))->spec().observation.shape[0], 3);
}

TEST(PluginEnvTest, DiscreteStepsReachThePluginAndEnvKeepsTheClock) {
  auto env = MakeEnv(kPlugin);
  std::vector<std::byte> obs(env->spec().observation.NumBytes());
  env->Reset(1, obs);
  EXPECT_EQ(Floats(obs)[0], 0.0f);
  StepResult r = env->Step(1, obs);
  EXPECT_EQ(r.reward, 1.0f);
  EXPECT_FALSE(r.terminated || r.truncated);
  EXPECT_EQ(Floats(obs)[0], 1.0f);
  EXPECT_EQ(Floats(obs)[1], 1.0f);
  // Env checks actions before the plugin sees them.
  EXPECT_THROW(env->Step(3, obs), InvalidArgument);
  EXPECT_THROW(env->Step(std::span<const float>(), obs), InvalidArgument);
  EXPECT_EQ(Floats(obs)[0], 1.0f);
  r = env->Step(2, obs);  // the counter's terminal action
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.reward, 2.0f);
  EXPECT_THROW(env->Step(0, obs), FailedPrecondition);

  // The time limit (10) is Env's; the plugin's own cut is truncated too.
  env->Reset(std::nullopt, obs);
  for (int t = 1; t <= 10; ++t) {
    r = env->Step(0, obs);
    EXPECT_EQ(r.truncated, t == 10) << t;
  }
  auto cut = MakeEnv(kPlugin, Kwargs(R"({"truncate_at": 2})"));
  cut->Reset(1, obs);
  EXPECT_FALSE(cut->Step(0, obs).truncated);
  r = cut->Step(0, obs);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
}

TEST(PluginEnvTest, ContinuousActionsReachThePlugin) {
  auto env = MakeEnv(Named("continuous"));
  std::vector<std::byte> obs(env->spec().observation.NumBytes());
  env->Reset(0, obs);
  const float action[2] = {-0.5f, 1.5f};
  const StepResult r = env->Step(std::span<const float>(action), obs);
  EXPECT_EQ(r.reward, 1.0f);
  double seen[2];
  std::memcpy(seen, obs.data(), sizeof(seen));
  EXPECT_EQ(seen[0], -0.5);
  EXPECT_EQ(seen[1], 1.5);
  const float out_of_bounds[2] = {0.0f, 2.5f};
  EXPECT_THROW(env->Step(std::span<const float>(out_of_bounds), obs), InvalidArgument);
  EXPECT_THROW(env->Step(1, obs), InvalidArgument);
}

TEST(PluginEnvTest, SeedsReplayEpisodesAndUnseededResetsContinueTheStream) {
  const EnvOptions o = Kwargs(R"({"size": 8, "max_episode_steps": 0})");
  auto a = MakeEnv(kPlugin, o);
  auto b = MakeEnv(kPlugin, o);
  std::vector<std::byte> obs_a(a->spec().observation.NumBytes()), obs_b(obs_a.size());
  // Never seeded: a seed from std::random_device each.
  a->Reset(std::nullopt, obs_a);
  b->Reset(std::nullopt, obs_b);
  EXPECT_NE(obs_a, obs_b);

  a->Reset(42, obs_a);
  b->Reset(42, obs_b);
  EXPECT_EQ(obs_a, obs_b);
  const std::vector<std::byte> first = obs_a;
  for (int t = 0; t < 20; ++t) {
    a->Step(t % 2, obs_a);
    b->Step(t % 2, obs_b);
    ASSERT_EQ(obs_a, obs_b) << t;
  }
  a->Reset(std::nullopt, obs_a);  // continues the seeded stream
  b->Reset(std::nullopt, obs_b);
  EXPECT_EQ(obs_a, obs_b);
  EXPECT_NE(obs_a, first);
  a->Reset(42, obs_a);
  EXPECT_EQ(obs_a, first);
}

TEST(PluginEnvTest, EveryLoadRefusalNamesThePathAndTheReason) {
  const fs::path dir = fs::temp_directory_path() / ("plugin_env_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  ExpectError<NotFound>([&] { MakeEnv("plugin:" + (dir / "missing.so").string()); },
                        {(dir / "missing.so").string(), "no such file"});
  ExpectError<NotFound>([] { MakeEnv("plugin:no/such/lib.so"); },
                        {"plugin:no/such/lib.so", "relative to the working directory"});
  ExpectError<InvalidArgument>([&] { MakeEnv("plugin:" + dir.string()); }, {"is not a file"});
  const fs::path text = dir / "text.so";
  std::ofstream(text) << "not a shared library\n";
  ExpectError<InvalidArgument>([&] { MakeEnv("plugin:" + text.string()); },
                               {text.string(), "cannot load the library"});
  ExpectError<InvalidArgument>(
      [] { MakeEnv(std::string("plugin:") + RLSWARM_NOT_A_PLUGIN); },
      {RLSWARM_NOT_A_PLUGIN, "not an rlswarm env plugin", "rlswarm_env_plugin_v1"});
  ExpectError<NotFound>([] { MakeEnv(Named("nope")); }, {kPlugin, "no env named 'nope'"});
  ExpectError<InvalidArgument>([] { MakeEnv(Named("wrong_abi")); },
                               {Named("wrong_abi"), "ABI version 999", "version 1", "rebuild"});
  ExpectError<InvalidArgument>([] { MakeEnv(Named("no_step")); }, {"has no 'step'"});
  ExpectError<InvalidArgument>([] { MakeEnv(kPlugin + ":"); }, {"empty NAME"});
  fs::remove_all(dir);
}

TEST(PluginEnvTest, CreateFailuresCarryThePluginsMessageAndConfig) {
  ExpectError<InvalidArgument>(
      [] { MakeEnv(Named("create_fails"), Kwargs(R"({"message": "no simulator licence"})")); },
      {Named("create_fails"), "create failed", "no simulator licence", R"("message")"});
  ExpectError<InvalidArgument>([] { MakeEnv(Named("create_fails"), Kwargs(R"({"message": ""})")); },
                               {"(the plugin gave no message)"});
  ExpectError<InvalidArgument>([] { MakeEnv(kPlugin, Kwargs("[1, 2]")); },
                               {"config is not a JSON object"});
}

TEST(PluginEnvTest, EveryInvalidSpecIsRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"name_null", "name is NULL"},
      {"name_empty", "name is empty"},
      {"name_long", "longer than 128 bytes"},
      {"name_binary", "not printable ASCII"},
      {"dtype", "observation_dtype 17"},
      {"rank_zero", "observation_rank 0"},
      {"rank_large", "observation_rank 9"},
      {"dim_zero", "observation_shape[0] is 0"},
      {"too_large", "larger than 1073741824 bytes"},
      {"bounds_half", "one is NULL"},
      {"bounds_count", "observation_bounds_count is 2, must be 1 or 3"},
      {"bounds_nan", "observation bound 0"},
      {"bounds_order", "observation bound 0 is [2.000000, 1.000000]"},
      {"no_actions", "no actions"},
      {"negative_actions", "num_actions is -2"},
      {"both_actions", "both num_actions"},
      {"action_dims", "action_dims 65"},
      {"action_bounds_missing", "need action_low and action_high"},
      {"action_bounds_infinite", "must be finite"},
      {"action_bounds_equal", "low < high"},
      {"max_episode_steps", "max_episode_steps is -1"},
  };
  const int live = LiveEnvs();
  for (const auto& [bad, message] : cases) {
    SCOPED_TRACE(bad);
    ExpectError<InvalidArgument>(
        [&] { MakeEnv(Named("bad_spec"), Kwargs(R"({"bad": ")" + bad + R"("})")); },
        {Named("bad_spec"), "spec is invalid", message});
  }
  EXPECT_EQ(LiveEnvs(), live);  // every refused env was destroyed
}

TEST(PluginEnvTest, OptionsOfOtherEnvKindsAreRefused) {
  EnvOptions minatar;
  minatar.sticky_action_prob = 0.1;
  ExpectError<InvalidArgument>([&] { MakeEnv(kPlugin, minatar); },
                               {"sticky_action_prob", "only to MinAtar"});
  EnvOptions python;
  python.python = "/usr/bin/python3";
  ExpectError<InvalidArgument>([&] { MakeEnv(kPlugin, python); }, {"'python'", "gymnasium"});
  EnvOptions mode;
  mode.autoreset_mode = "next_step";
  ExpectError<InvalidArgument>([&] { MakeEnv(kPlugin, mode); }, {"autoreset_mode"});
  // Built-in envs still refuse kwargs.
  ExpectError<InvalidArgument>([] { MakeEnv("CartPole-v1", Kwargs(R"({"a": 1})")); },
                               {"'kwargs'", "plugin: envs"});
}

TEST(PluginEnvTest, AFailedStepIsAnErrorWithThePluginsMessageUntilReset) {
  auto env = MakeEnv(Named("step_fails"), Kwargs(R"({"fail": "step", "at": 2})"));
  std::vector<std::byte> obs(env->spec().observation.NumBytes());
  env->Reset(0, obs);
  env->Step(0, obs);
  ExpectError<Internal>([&] { env->Step(0, obs); },
                        {Named("step_fails"), "step failed", "simulated failure at step 2"});
  ExpectError<FailedPrecondition>([&] { env->Step(0, obs); }, {"after a failed reset or step"});
  EXPECT_EQ(env->elapsed_steps(), 1);  // the failed step did not count
  env->Reset(0, obs);
  EXPECT_NO_THROW(env->Step(0, obs));

  auto silent = MakeEnv(Named("step_fails"), Kwargs(R"({"fail": "silent", "at": 1})"));
  silent->Reset(0, obs);
  ExpectError<Internal>([&] { silent->Step(0, obs); }, {"(the plugin gave no message)"});

  auto nan = MakeEnv(Named("step_fails"), Kwargs(R"({"fail": "nan_reward", "at": 1})"));
  nan->Reset(0, obs);
  ExpectError<Internal>([&] { nan->Step(0, obs); }, {"returned the reward nan"});

  auto reset = MakeEnv(Named("step_fails"), Kwargs(R"({"fail": "reset"})"));
  ExpectError<Internal>([&] { reset->Reset(0, obs); },
                        {"reset failed", "the test plugin fails every reset"});
  ExpectError<FailedPrecondition>([&] { reset->Step(0, obs); }, {"before the first Reset"});
}

TEST(PluginEnvTest, EnvsAreDestroyedAndTheLibraryIsLoadedOncePerFile) {
  const int live = LiveEnvs();
  {
    auto a = MakeEnv(kPlugin);
    auto b = MakeEnv(Named("image"));
    EXPECT_EQ(LiveEnvs(), live + 2);
  }
  EXPECT_EQ(LiveEnvs(), live);
  const fs::path path = RLSWARM_TEST_PLUGIN;
  const auto direct = PluginLibrary::Load(ParsePluginAddress(path.string()));
  const auto roundabout = PluginLibrary::Load(
      ParsePluginAddress((path.parent_path() / "." / path.filename()).string()));
  EXPECT_EQ(direct.get(), roundabout.get());
  EXPECT_EQ(direct->canonical_path(), fs::canonical(path).string());
}

TEST(PluginEnvTest, AVectorEnvOfPluginEnvsStepsAsOneThreadWithFourAndAutoResets) {
  VectorEnvOptions o;
  o.num_envs = 8;
  o.env.kwargs_json = R"({"size": 4, "max_episode_steps": 5})";
  VectorEnv one("plugin:" + std::string(RLSWARM_TEST_PLUGIN), o);
  o.num_threads = 4;
  VectorEnv four("plugin:" + std::string(RLSWARM_TEST_PLUGIN), o);
  EXPECT_EQ(one.spec().name, "counter");
  one.Reset(7);
  four.Reset(7);
  int ended = 0;
  for (int t = 0; t < 40; ++t) {
    std::vector<std::int64_t> actions(8);
    for (int i = 0; i < 8; ++i) actions[i] = (t * 7 + i) % 11 == 0 ? 2 : (t + i) % 2;
    one.Step(actions);
    four.Step(actions);
    ASSERT_EQ(0, std::memcmp(one.observations(), four.observations(), 8 * one.observation_bytes()));
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(one.rewards()[i], actions[i]);
      ASSERT_EQ(one.terminated()[i], actions[i] == 2);
      ASSERT_EQ(one.truncated()[i], four.truncated()[i]);
      if (one.done(i)) {
        ++ended;
        // Same-step auto-reset: the row is the new episode's first observation.
        float first[4];
        std::memcpy(first, one.observation(i).data(), sizeof(first));
        EXPECT_EQ(first[0], 0.0f);
        float last[4];
        std::memcpy(last, one.final_observation(i).data(), sizeof(last));
        EXPECT_EQ(last[0], static_cast<float>(one.episode_length(i)));
      }
    }
  }
  EXPECT_GT(ended, 8);
}

}  // namespace
}  // namespace rlswarm::envs
