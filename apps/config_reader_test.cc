// Configs: typed reading, overrides, and errors that name key, file and line.

#include "apps/config_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/experiment_config.h"

namespace rlswarm::apps {
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

TEST_F(ConfigTest, ShippedConfigsLoad) {
  for (const auto& entry : std::filesystem::directory_iterator(RLSWARM_CONFIGS_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(ExperimentConfig::Load(entry.path().string(), {}));
  }
}

}  // namespace
}  // namespace rlswarm::apps
