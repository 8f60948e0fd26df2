// Configs: typed reading, overrides, and errors that name key, file and line.

#include "config/config_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "actors/acting_policy.h"
#include "config/experiment_config.h"
#include "learner/apex/apex_options.h"
#include "models/model_spec.h"
#include "replay/service/transition.h"

namespace rlswarm::config {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("rlswarm_config_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    path_ = (dir / (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                    ".yaml"))
                .string();
    std::ofstream(path_) << text;
    return path_;
  }

  // The message of the ConfigError that loading throws.
  std::string ErrorOf(const std::string& file, const std::vector<std::string>& overrides = {}) {
    try {
      ExperimentConfig::Load(file, overrides);
    } catch (const ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no ConfigError";
    return "";
  }

  std::string path_;
};

TEST_F(ConfigTest, DefaultsWithoutAFile) {
  const auto c = ExperimentConfig::Load("", {});
  EXPECT_EQ(c.env.name, "CartPole-v1");
  EXPECT_EQ(c.env.num_envs, 16);
  EXPECT_FALSE(c.env.max_episode_steps.has_value());
  EXPECT_EQ(c.evaluate.episodes, 100);
}

TEST_F(ConfigTest, ReadsTypedValues) {
  const auto file = Write(
      "env:\n  name: MinAtar/Breakout\n  num_envs: 8\n  sticky_action_prob: 0.25\n"
      "  difficulty_ramping: false\n  max_episode_steps: 1000\nevaluate:\n  seed: 12345678901\n");
  const auto c = ExperimentConfig::Load(file, {});
  EXPECT_EQ(c.env.name, "MinAtar/Breakout");
  EXPECT_EQ(c.env.num_envs, 8);
  EXPECT_EQ(c.env.sticky_action_prob, 0.25);
  EXPECT_EQ(c.env.difficulty_ramping, false);
  EXPECT_EQ(c.env.max_episode_steps, 1000);
  EXPECT_EQ(c.evaluate.seed, 12345678901u);
}

TEST_F(ConfigTest, UnknownKeyNamesKeyFileAndLineAndTheKnownKeys) {
  const auto file = Write("env:\n  name: CartPole-v1\n  num_env: 8\n");
  const std::string msg = ErrorOf(file);
  EXPECT_NE(msg.find(file + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("env.num_env"), std::string::npos) << msg;
  EXPECT_NE(msg.find("num_envs"), std::string::npos) << msg;
}

TEST_F(ConfigTest, UnknownSectionIsAnError) {
  const auto file = Write("env:\n  num_envs: 2\nlerner:\n  lr: 1\n");
  const std::string msg = ErrorOf(file);
  EXPECT_NE(msg.find(file + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'lerner'"), std::string::npos) << msg;
}

TEST_F(ConfigTest, WrongTypesAreErrorsWithTheLine) {
  EXPECT_NE(ErrorOf(Write("env:\n  num_envs: eight\n")).find(":2:"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("env:\n  num_envs: 2.5\n")).find("must be an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Write("env:\n  difficulty_ramping: maybe\n")).find("true or false"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Write("env:\n  num_envs: [1, 2]\n")).find("got a list"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("evaluate:\n  seed: -1\n")).find("non-negative"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("env: 3\n")).find("must be a map"), std::string::npos);
}

TEST_F(ConfigTest, OutOfRangeValuesAreErrors) {
  const std::string msg = ErrorOf(Write("env:\n  sticky_action_prob: 1.5\n"));
  EXPECT_NE(msg.find("env.sticky_action_prob"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 1]"), std::string::npos) << msg;
  EXPECT_NE(ErrorOf(Write("env:\n  num_envs: 0\n")).find(":2:"), std::string::npos);
}

TEST_F(ConfigTest, ChoicesAreChecked) {
  const std::string msg = ErrorOf(Write("env:\n  name: CartPole-v0\n"));
  EXPECT_NE(msg.find("CartPole-v1"), std::string::npos) << msg;
  EXPECT_NE(ErrorOf(Write("evaluate:\n  policy: greedy\n")).find("random"), std::string::npos);
}

TEST_F(ConfigTest, MetricsEndpointsListenOnLoopbackUnlessToldAnIpAddress) {
  const auto defaults = ExperimentConfig::Load("", {});
  EXPECT_EQ(defaults.launch.metrics_port, -1);
  EXPECT_EQ(defaults.launch.metrics_bind, "127.0.0.1");
  for (const char* address : {"0.0.0.0", "10.1.2.3", "::1", "::"}) {
    const auto c = ExperimentConfig::Load(
        Write(std::string("launch:\n  metrics_bind: \"") + address + "\"\n"), {});
    EXPECT_EQ(c.launch.metrics_bind, address);
  }
  // A host name could resolve to more than the one interface meant; a port
  // belongs in metrics_port.
  for (const char* bad : {"localhost", "127.0.0.1:9100", "256.0.0.1", "", "http://127.0.0.1"}) {
    const std::string msg = ErrorOf("", {std::string("launch.metrics_bind='") + bad + "'"});
    EXPECT_NE(msg.find("section 'launch'"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("metrics_bind '" + std::string(bad) + "'"), std::string::npos)
        << bad << ": " << msg;
  }
  for (const char* bad : {"launch.metrics_port=65536", "launch.metrics_port=-2"}) {
    const std::string msg = ErrorOf("", {bad});
    EXPECT_NE(msg.find("launch.metrics_port"), std::string::npos) << msg;
  }
}

TEST_F(ConfigTest, OverridesReplaceFileValuesAndCreateSections) {
  const auto file = Write("env:\n  num_envs: 8\n");
  const auto c = ExperimentConfig::Load(
      file, {"env.num_envs=4", "evaluate.episodes=7", "env.name=MinAtar/Freeway"});
  EXPECT_EQ(c.env.num_envs, 4);
  EXPECT_EQ(c.evaluate.episodes, 7);
  EXPECT_EQ(c.env.name, "MinAtar/Freeway");
}

TEST_F(ConfigTest, BadOverridesNameTheOverride) {
  EXPECT_NE(ErrorOf("", {"env.num_envs=zero"}).find("command-line override 'env.num_envs=zero'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"env.nope=1"}).find("unknown key 'env.nope'"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"num_envs=1"}).find("section.key=value"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"env.num_envs"}).find("section.key=value"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"env.num_envs.x=1"}).find("command-line override 'env.num_envs.x=1'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"env.num_envs=2", "env.num_envs.x=1"}).find("not a section"),
            std::string::npos);
}

TEST_F(ConfigTest, OptionsThatDoNotApplyToTheEnvAreErrors) {
  const std::string msg = ErrorOf(Write("env:\n  name: CartPole-v1\n  sticky_action_prob: 0.1\n"));
  EXPECT_NE(msg.find("sticky_action_prob"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
}

TEST_F(ConfigTest, SyntaxErrorsAndMissingFilesAreReported) {
  EXPECT_NE(ErrorOf(Write("env:\n  name: [unclosed\n")).find("YAML syntax error"),
            std::string::npos);
  EXPECT_NE(ErrorOf("/nonexistent/rlswarm.yaml").find("cannot open"), std::string::npos);
}

TEST_F(ConfigTest, PrintedConfigLoadsBackToTheSameValues) {
  auto c = ExperimentConfig::Load("", {"env.name=MinAtar/Asterix", "env.sticky_action_prob=0.3",
                                       "evaluate.seed=9", "env.max_episode_steps=100"});
  const auto file = Write(c.ToYaml());
  const auto back = ExperimentConfig::Load(file, {});
  EXPECT_EQ(back.env.name, "MinAtar/Asterix");
  EXPECT_EQ(back.env.sticky_action_prob, 0.3);
  EXPECT_EQ(back.env.max_episode_steps, 100);
  EXPECT_FALSE(back.env.difficulty_ramping.has_value());
  EXPECT_EQ(back.evaluate.seed, 9u);
}

TEST_F(ConfigTest, SecurityIsOffByDefaultAndMapsKeysDirToKeyFiles) {
  const auto off = ExperimentConfig::Load("", {});
  EXPECT_FALSE(off.security.curve);
  EXPECT_FALSE(off.security.ToServerOptions().curve);
  EXPECT_FALSE(off.security.ToClientOptions().curve);

  const auto on = ExperimentConfig::Load(
      "", {"security.curve=true", "security.keys_dir=/k", "security.client_key=actor-3"});
  const auto server = on.security.ToServerOptions();
  EXPECT_TRUE(server.curve);
  EXPECT_EQ(server.server_secret_key_file, "/k/server.key_secret");
  EXPECT_EQ(server.authorized_clients_dir, "/k/authorized_clients");
  const auto client = on.security.ToClientOptions();
  EXPECT_TRUE(client.curve);
  EXPECT_EQ(client.client_secret_key_file, "/k/actor-3.key_secret");
  EXPECT_EQ(client.server_public_key_file, "/k/server.key");
}

TEST_F(ConfigTest, CurveWithoutKeysDirOrWithAPathAsClientKeyIsAnError) {
  EXPECT_NE(ErrorOf("", {"security.curve=true"}).find("security.keys_dir"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"security.curve=true", "security.keys_dir=k", "security.client_key=a/b"})
                .find("security.client_key"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Write("security:\n  curve: sometimes\n")).find(":2:"), std::string::npos);
}

TEST_F(ConfigTest, FrameSharingStoresAtariFramesOnceAndLeavesSmallObservationsInline) {
  const auto frame_fields = [](const std::string& mode, DType dtype,
                               std::vector<std::int64_t> shape) {
    ReplaySection replay;
    replay.frame_sharing = mode;
    return replay
        .ToServiceOptions(0, replay::TransitionSignature(dtype, shape, DType::kInt64, {}), {}, {})
        .table.frame_fields;
  };
  const std::vector<std::string> both = {"observation", "next_observation"};
  EXPECT_EQ(frame_fields("auto", DType::kUInt8, {4, 84, 84}), both);      // Atari
  EXPECT_TRUE(frame_fields("auto", DType::kUInt8, {4, 10, 10}).empty());  // 100-byte frames
  EXPECT_TRUE(frame_fields("auto", DType::kFloat32, {4, 84, 84}).empty());
  EXPECT_TRUE(frame_fields("auto", DType::kFloat32, {4}).empty());  // CartPole
  EXPECT_TRUE(frame_fields("off", DType::kUInt8, {4, 84, 84}).empty());
  EXPECT_EQ(frame_fields("on", DType::kFloat32, {4, 10, 10}), both);
  try {
    frame_fields("on", DType::kFloat32, {4});
    ADD_FAILURE() << "frame_sharing: on with flat observations";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("frame_sharing"), std::string::npos) << e.what();
  }
}

TEST_F(ConfigTest, Td3BuildsThePolicyAndTheCriticsForTheEnvsActionSpec) {
  const ExperimentConfig pendulum =
      ExperimentConfig::Load(std::string(RLSWARM_CONFIGS_DIR) + "/pendulum.yaml", {});
  EXPECT_EQ(pendulum.learner.algorithm, "td3");
  const actors::ActingNetworks networks = pendulum.ActingNetworks();
  EXPECT_EQ(networks.policy.num_actions, 1);         // one torque
  EXPECT_EQ(networks.policy.sample_shape.at(0), 3);  // cos, sin, theta dot
  ASSERT_TRUE(networks.critic.has_value());
  EXPECT_EQ(networks.critic->sample_shape.at(0), 3 + 1);  // [s, a]
  EXPECT_FALSE(pendulum.ActingNetworks(/*with_critic=*/false).critic.has_value());
  // The replay signature follows the env: float actions of the spec's shape.
  const replay::Signature signature = pendulum.TransitionSignature();
  bool float_action = false;
  for (const auto& field : signature.fields) {
    if (field.name == "action") float_action = field.dtype == DType::kFloat32;
  }
  EXPECT_TRUE(float_action);
  // Each algorithm refuses the other's kind of actions, naming it.
  const ExperimentConfig cartpole = ExperimentConfig::Load("", {"learner.algorithm=td3"});
  try {
    cartpole.ActingNetworks();
    ADD_FAILURE() << "td3 on CartPole";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("continuous"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ExperimentConfig::Load("", {"env.name=Pendulum-v1"}).ActingNetworks(),
               InvalidArgument);
  EXPECT_NE(ErrorOf("", {"learner.algorithm=td3", "learner.publish_mode=parts"})
                .find("publish_mode must be full"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"learner.algorithm=ddpg"}).find("learner.algorithm"), std::string::npos);
}

TEST_F(ConfigTest, ResidualTorsoPicksTheResidualNetworkForTheObservationShape) {
  EXPECT_EQ(ExperimentConfig::Load("", {}).ModelSpec().name, "mlp");  // plain by default
  const auto mlp =
      ExperimentConfig::Load("", {"model.torso=residual", "model.width=16", "model.blocks=3"});
  const auto mlp_spec = mlp.ModelSpec();
  EXPECT_EQ(mlp_spec.name, "residual_mlp");
  EXPECT_EQ(mlp_spec.layers.size(), 6u);  // embed, 3 blocks, norm, head
  const auto conv = ExperimentConfig::Load(
      "", {"env.name=MinAtar/Breakout", "model.torso=residual", "model.channels=8",
           "model.stages=3", "model.blocks_per_stage=1", "model.dueling=true"});
  const auto conv_spec = conv.ModelSpec();
  EXPECT_EQ(conv_spec.name, "residual_conv");
  EXPECT_EQ(conv_spec.sample_shape, (std::vector<int64_t>{10, 10, 4}));  // channels last
  EXPECT_EQ(conv_spec.layers.size(), 3u * 2 + 2);
}

// The sizes models/README.md documents for >= 100 M parameters: the specs
// only (nothing is allocated).
TEST_F(ConfigTest, DocumentedResidualSizesReachAHundredMillionParameters) {
  const auto mlp =
      ExperimentConfig::Load("", {"model.torso=residual", "model.width=1024", "model.blocks=48"});
  EXPECT_GE(mlp.ModelSpec().Numel(), 100'000'000);
  const auto conv = ExperimentConfig::Load(
      "", {"env.name=MinAtar/Breakout", "model.torso=residual", "model.channels=512",
           "model.stages=3", "model.blocks_per_stage=7", "model.width=512"});
  EXPECT_GE(conv.ModelSpec().Numel(), 100'000'000);
}

TEST_F(ConfigTest, BadResidualKeysNameTheKey) {
  EXPECT_NE(ErrorOf("", {"model.torso=deep"}).find("model.torso"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"model.width=0"}).find("model.width"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"model.blocks=-2"}).find("model.blocks"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"model.channels=0"}).find("model.channels"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"model.stages=9"}).find("model.stages"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"model.blocks_per_stage=0"}).find("model.blocks_per_stage"),
            std::string::npos);
}

TEST_F(ConfigTest, WrapMinParamsExcludesLayersPerUnit) {
  EXPECT_EQ(ExperimentConfig::Load("", {}).learner.wrap_min_params, 0);
  EXPECT_EQ(ExperimentConfig::Load("", {"learner.wrap_min_params=4096"}).learner.wrap_min_params,
            4096);
  EXPECT_NE(ErrorOf("", {"learner.wrap_min_params=-1"}).find("learner.wrap_min_params"),
            std::string::npos);
  const std::string both =
      ErrorOf(Write("learner:\n  wrap_min_params: 1000\n  layers_per_unit: [2, 1]\n"));
  EXPECT_NE(both.find("learner.wrap_min_params"), std::string::npos) << both;
  EXPECT_NE(both.find("learner.layers_per_unit"), std::string::npos) << both;
  EXPECT_NE(both.find(path_), std::string::npos) << both;
}

TEST_F(ConfigTest, WatchdogTimeoutDefaultsToThirtySecondsAndRejectsBadValues) {
  EXPECT_EQ(ExperimentConfig::Load("", {}).learner.watchdog_timeout_s, 30);
  EXPECT_EQ(ExperimentConfig::Load("", {"learner.watchdog_timeout_s=0"}).learner.watchdog_timeout_s,
            0);
  EXPECT_EQ(
      ExperimentConfig::Load("", {"learner.watchdog_timeout_s=2.5"}).learner.watchdog_timeout_s,
      2.5);
  EXPECT_NE(ErrorOf("", {"learner.watchdog_timeout_s=-1"}).find("learner.watchdog_timeout_s"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"learner.watchdog_timeout_s=fast"}).find("learner.watchdog_timeout_s"),
            std::string::npos);
  const std::string tiny = ErrorOf(Write("learner:\n  watchdog_timeout_s: 0.01\n"));
  EXPECT_NE(tiny.find("learner.watchdog_timeout_s"), std::string::npos) << tiny;
  EXPECT_NE(tiny.find(path_), std::string::npos) << tiny;
}

TEST_F(ConfigTest, RmsPropOptionsReachTheOptimizerAndAreRmsPropsOnly) {
  auto optimizer = [](const ExperimentConfig& c) {
    return c.learner
        .ToApeXOptions(c.replay.ToSamplerOptions(c.security.ToClientOptions()),
                       c.security.ToServerOptions())
        .model.optimizer;
  };
  const learner::OptimizerOptions defaults = optimizer(ExperimentConfig::Load("", {}));
  EXPECT_EQ(defaults.eps, 1e-8);
  EXPECT_EQ(defaults.alpha, 0.99);
  EXPECT_FALSE(defaults.centered);
  const learner::OptimizerOptions set = optimizer(ExperimentConfig::Load(
      Write("learner:\n  optimizer: rmsprop\n  optimizer_eps: 0.01\n  rmsprop_alpha: 0.95\n"
            "  rmsprop_centered: true\n"),
      {}));
  EXPECT_EQ(set.kind, learner::OptimizerKind::kRmsProp);
  EXPECT_EQ(set.eps, 0.01);
  EXPECT_EQ(set.alpha, 0.95);
  EXPECT_TRUE(set.centered);
  const std::string on_adam = ErrorOf("", {"learner.rmsprop_centered=true"});
  EXPECT_NE(on_adam.find("learner.rmsprop_centered"), std::string::npos) << on_adam;
  EXPECT_NE(on_adam.find("adam"), std::string::npos) << on_adam;
  EXPECT_NE(ErrorOf("", {"learner.rmsprop_alpha=0.9"}).find("rmsprop"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"learner.optimizer=rmsprop", "learner.rmsprop_alpha=1"})
                .find("learner.rmsprop_alpha"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"learner.optimizer_eps=-1"}).find("learner.optimizer_eps"),
            std::string::npos);
}

TEST_F(ConfigTest, PrefetchDepthsDefaultToTwoAndReachTheShardingOptions) {
  auto options = [](const ExperimentConfig& c) {
    return c.learner.ToApeXOptions(c.replay.ToSamplerOptions(c.security.ToClientOptions()),
                                   c.security.ToServerOptions());
  };
  const auto defaults = ExperimentConfig::Load("", {});
  EXPECT_EQ(defaults.learner.forward_prefetch, 2);
  EXPECT_EQ(defaults.learner.backward_prefetch, 2);
  EXPECT_TRUE(defaults.learner.replay_prefetch);
  EXPECT_EQ(options(defaults).model.sharding.num_to_forward_prefetch, 2);
  EXPECT_EQ(options(defaults).model.sharding.num_to_backward_prefetch, 2);
  EXPECT_TRUE(options(defaults).replay_prefetch);

  const auto set = ExperimentConfig::Load(
      Write("learner:\n  forward_prefetch: 0\n  backward_prefetch: 3\n  replay_prefetch: false\n"),
      {});
  EXPECT_EQ(options(set).model.sharding.num_to_forward_prefetch, 0);
  EXPECT_EQ(options(set).model.sharding.num_to_backward_prefetch, 3);
  EXPECT_FALSE(options(set).replay_prefetch);
  EXPECT_NE(ErrorOf("", {"learner.forward_prefetch=-1"}).find("learner.forward_prefetch"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", {"learner.backward_prefetch=-1"}).find("learner.backward_prefetch"),
            std::string::npos);
}

TEST_F(ConfigTest, ActivationCheckpointingDefaultsOffAndReachesTheShardingOptions) {
  auto options = [](const ExperimentConfig& c) {
    return c.learner.ToApeXOptions(c.replay.ToSamplerOptions(c.security.ToClientOptions()),
                                   c.security.ToServerOptions());
  };
  const auto defaults = ExperimentConfig::Load("", {});
  EXPECT_FALSE(defaults.learner.activation_checkpointing);
  EXPECT_FALSE(options(defaults).model.sharding.activation_checkpointing);
  const auto on = ExperimentConfig::Load(Write("learner:\n  activation_checkpointing: true\n"), {});
  EXPECT_TRUE(options(on).model.sharding.activation_checkpointing);
  EXPECT_TRUE(options(ExperimentConfig::Load("", {"learner.activation_checkpointing=true"}))
                  .model.sharding.activation_checkpointing);
  const std::string bad = ErrorOf(Write("learner:\n  activation_checkpointing: sometimes\n"));
  EXPECT_NE(bad.find("learner.activation_checkpointing"), std::string::npos) << bad;
  EXPECT_NE(bad.find(path_), std::string::npos) << bad;
  EXPECT_NE(bad.find("true or false"), std::string::npos) << bad;
}

TEST_F(ConfigTest, AsyncCheckpointDefaultsToTrueAndRejectsNonBooleans) {
  auto options = [](const ExperimentConfig& c) {
    return c.learner.ToApeXOptions(c.replay.ToSamplerOptions(c.security.ToClientOptions()),
                                   c.security.ToServerOptions());
  };
  EXPECT_TRUE(options(ExperimentConfig::Load("", {})).async_checkpoint);
  EXPECT_FALSE(options(ExperimentConfig::Load(Write("learner:\n  async_checkpoint: false\n"), {}))
                   .async_checkpoint);
  const std::string msg = ErrorOf(Write("learner:\n  async_checkpoint: sometimes\n"));
  EXPECT_NE(msg.find(path_ + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("learner.async_checkpoint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("true or false"), std::string::npos) << msg;
}

TEST_F(ConfigTest, OldPrefetchKeyNamesItsReplacements) {
  for (const std::string& msg :
       {ErrorOf(Write("learner:\n  prefetch: true\n")), ErrorOf("", {"learner.prefetch=false"})}) {
    EXPECT_NE(msg.find("learner.prefetch is now learner.replay_prefetch"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("learner.forward_prefetch/backward_prefetch"), std::string::npos) << msg;
  }
  EXPECT_NE(ErrorOf(Write("learner:\n  prefetch: true\n")).find(path_), std::string::npos);
  // --print-config shows only the new keys, and what it prints loads back.
  const std::string yaml = ExperimentConfig::Load("", {}).ToYaml();
  EXPECT_NE(yaml.find("replay_prefetch"), std::string::npos);
  EXPECT_EQ(yaml.find(" prefetch:"), std::string::npos) << yaml;
  EXPECT_NO_THROW(ExperimentConfig::Load(Write(yaml), {}));
}

// Configs of Gymnasium envs ask a Python for the env's spaces while they
// load: the repository's .venv/ (scripts/setup.sh --python) answers where it
// exists; without it they must fail with the error that says how to make it.
TEST_F(ConfigTest, ShippedConfigsLoad) {
  const bool have_venv = std::filesystem::exists(RLSWARM_TEST_VENV "/bin/python");
  const char* outer = std::getenv("VIRTUAL_ENV");
  const std::string outer_venv = outer ? outer : "";
  // Without .venv/, a venv with no Python: not whatever python3 is on PATH.
  ::setenv("VIRTUAL_ENV", have_venv ? RLSWARM_TEST_VENV : "/nonexistent-venv", 1);
  int gymnasium_configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RLSWARM_CONFIGS_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("name: gymnasium:") == std::string::npos || have_venv) {
      EXPECT_NO_THROW(ExperimentConfig::Load(entry.path().string(), {}));
      continue;
    }
    ++gymnasium_configs;
    const std::string msg = ErrorOf(entry.path().string());
    EXPECT_NE(msg.find("scripts/setup.sh --python"), std::string::npos) << msg;
  }
  if (!have_venv) {
    EXPECT_GT(gymnasium_configs, 0);
  }
  if (outer) {
    ::setenv("VIRTUAL_ENV", outer_venv.c_str(), 1);
  } else {
    ::unsetenv("VIRTUAL_ENV");
  }
}

TEST_F(ConfigTest, ShardGroupSizeBelongsToHybridShardAndMustDivideTheWorld) {
  const auto defaults = ExperimentConfig::Load("", {});
  EXPECT_EQ(defaults.learner.shard_group_size, 0);
  const auto hybrid = ExperimentConfig::Load("", {"learner.strategy=hybrid_shard"});
  EXPECT_EQ(hybrid.learner
                .ToApeXOptions(hybrid.replay.ToSamplerOptions(hybrid.security.ToClientOptions()),
                               hybrid.security.ToServerOptions())
                .model.sharding.strategy,
            learner::ShardingStrategy::kHybridShard);
  EXPECT_EQ(hybrid.learner.ShardGroupSize(8, 4, "f.yaml"), 4);  // LOCAL_WORLD_SIZE
  EXPECT_EQ(hybrid.learner.ShardGroupSize(8, 0, "f.yaml"), 8);  // the world: full_shard
  const std::string ignored =
      ErrorOf(Write("learner:\n  strategy: full_shard\n  shard_group_size: 2\n"));
  EXPECT_NE(ignored.find("learner.shard_group_size"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find(path_), std::string::npos) << ignored;
  const auto three = ExperimentConfig::Load(
      Write("learner:\n  strategy: hybrid_shard\n  shard_group_size: 3\n"), {});
  EXPECT_EQ(three.learner.ShardGroupSize(6, 2, path_), 3);
  try {
    three.learner.ShardGroupSize(4, 2, path_);
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("learner.shard_group_size"), std::string::npos) << what;
    EXPECT_NE(what.find("does not divide the world size 4"), std::string::npos) << what;
    EXPECT_NE(what.find(path_), std::string::npos) << what;
  }
  // A node size that does not divide the world (uneven nodes) is named too.
  EXPECT_THROW(hybrid.learner.ShardGroupSize(6, 4, "f.yaml"), ConfigError);
}

// A config written next to the test's own (same directory), by name.
std::string WriteBeside(const std::string& of, const std::string& name, const std::string& text) {
  const auto path = (std::filesystem::path(of).parent_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST_F(ConfigTest, BaseConfigIsMergedUnderTheFileSectionBySection) {
  const std::string here = Write("");
  WriteBeside(here, "base_root.yaml",
              "env:\n  num_envs: 8\nlearner:\n  lr: 0.5\n  batch_size: 32\n");
  WriteBeside(here, "base_mid.yaml",
              "base: base_root.yaml\nlearner:\n  batch_size: 64\nactor:\n  n_step: 5\n");
  const std::string top = Write("base: base_mid.yaml\nenv:\n  name: Acrobot-v1\n");
  auto c = ExperimentConfig::Load(top, {"learner.lr=0.25"});
  EXPECT_EQ(c.env.name, "Acrobot-v1");   // this file
  EXPECT_EQ(c.env.num_envs, 8);          // its base's base, same section
  EXPECT_EQ(c.learner.batch_size, 64);   // the nearer base wins
  EXPECT_EQ(c.actor.n_step, 5);          // a section only a base has
  EXPECT_DOUBLE_EQ(c.learner.lr, 0.25);  // overrides win over every file
  EXPECT_EQ(c.ToYaml().find("base:"), std::string::npos);
}

TEST_F(ConfigTest, AnErrorInABaseConfigNamesTheBaseFileAndLine) {
  const std::string here = Write("");
  const std::string base =
      WriteBeside(here, "bad_base.yaml", "env:\n  name: CartPole-v1\n  num_envs: -3\n");
  const std::string what = ErrorOf(Write("base: bad_base.yaml\nlearner:\n  lr: 0.1\n"));
  EXPECT_NE(what.find(base + ":3:"), std::string::npos) << what;
  EXPECT_NE(what.find("env.num_envs"), std::string::npos) << what;
}

TEST_F(ConfigTest, MissingCyclicOrMalformedBaseIsAConfigError) {
  const std::string here = Write("");
  std::string what = ErrorOf(Write("base: no_such_base.yaml\n"));
  EXPECT_NE(what.find(path_ + ":1:"), std::string::npos) << what;
  EXPECT_NE(what.find("cannot open config file"), std::string::npos) << what;
  EXPECT_NE(what.find("no_such_base.yaml"), std::string::npos) << what;

  WriteBeside(here, "cycle_a.yaml", "base: cycle_b.yaml\n");
  WriteBeside(here, "cycle_b.yaml", "base: cycle_a.yaml\n");
  what = ErrorOf(Write("base: cycle_a.yaml\n"));
  EXPECT_NE(what.find("cycle"), std::string::npos) << what;

  what = ErrorOf(Write("base: [a.yaml, b.yaml]\n"));
  EXPECT_NE(what.find("key 'base'"), std::string::npos) << what;
}

}  // namespace
}  // namespace rlswarm::config
