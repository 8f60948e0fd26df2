// The rlswarm binary run as a real child process, as a user runs it.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/testing/child_process.h"

namespace {

struct CommandResult {
  int exit_code = -1;  // 128 + the signal if one ended it; -1 if it outlived the deadline
  std::string out;     // what was captured
};

// Which of the binary's streams a run captures; the other goes to /dev/null.
enum class Captured { kStdoutAndStderr, kStdout, kStderr };

// A hung command fails its test instead of stalling the suite.
constexpr std::chrono::seconds kCommandDeadline{120};

// Runs the binary with `args` (split at spaces, as a shell would split
// them: no argument holds one).
CommandResult Rlswarm(const std::string& args, Captured captured = Captured::kStdoutAndStderr,
                      const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {RLSWARM_BINARY};
  std::istringstream words(args);
  for (std::string word; words >> word;) argv.push_back(word);
  using Sink = rlswarm::testing::ChildProcessOptions::Sink;
  rlswarm::testing::ChildProcessOptions options;
  options.out = captured == Captured::kStderr ? Sink::kNull : Sink::kCapture;
  options.err = captured == Captured::kStdout ? Sink::kNull : Sink::kCapture;
  options.env = env;
  rlswarm::testing::ChildProcess child(argv, options);
  CommandResult run;
  run.out = child.ReadAll(kCommandDeadline);
  run.exit_code = child.Wait(kCommandDeadline).value_or(-1);
  return run;
}

// Runs a --json command and parses its stdout, which must be JSON alone.
nlohmann::json Json(const std::string& args) {
  const CommandResult run = Rlswarm(args, Captured::kStdout);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return nlohmann::json::parse(run.out);
}

const char* kEnvs[] = {
    "CartPole-v1",      "Acrobot-v1",      "MountainCar-v0",  "Pendulum-v1",
    "MinAtar/Breakout", "MinAtar/Freeway", "MinAtar/Asterix", "MinAtar/SpaceInvaders",
    "MinAtar/Seaquest"};

TEST(CliTest, EnvsJsonListsEveryEnvWithItsSpecs) {
  const nlohmann::json envs = Json("envs --json");
  ASSERT_EQ(envs.size(), 9u);
  for (const auto& e : envs) {
    EXPECT_TRUE(e["observation"].contains("shape"));
    EXPECT_TRUE(e["observation"].contains("dtype"));
    EXPECT_TRUE(e["observation"].contains("low"));
    EXPECT_TRUE(e["observation"].contains("high"));
    const auto& a = e["action"];
    EXPECT_TRUE(a["kind"] == "discrete" || a["kind"] == "continuous");
    EXPECT_TRUE(a.contains(a["kind"] == "discrete" ? "n" : "shape"));
    EXPECT_TRUE(a.contains("low") && a.contains("high"));
  }
  const auto find = [&](const std::string& name) {
    for (const auto& e : envs) {
      if (e["name"] == name) return e;
    }
    ADD_FAILURE() << name << " missing";
    return nlohmann::json{};
  };
  EXPECT_EQ(find("CartPole-v1")["observation"]["shape"], nlohmann::json({4}));
  EXPECT_EQ(find("CartPole-v1")["observation"]["high"][1], "inf");
  EXPECT_EQ(find("CartPole-v1")["action"]["n"], 2);
  EXPECT_EQ(find("MinAtar/Seaquest")["observation"]["shape"], nlohmann::json({10, 10, 10}));
  EXPECT_EQ(find("MinAtar/Seaquest")["observation"]["dtype"], "bool");
  EXPECT_EQ(find("Pendulum-v1")["action"]["kind"], "continuous");
  EXPECT_EQ(find("Pendulum-v1")["action"]["high"], 2.0);
}

TEST(CliTest, EnvsTablePrintsOneLinePerEnv) {
  const CommandResult run = Rlswarm("envs");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* name : kEnvs) EXPECT_NE(run.out.find(name), std::string::npos) << name;
}

// Named envs beyond the built-in ones: a C plugin is loaded and described;
// one that cannot be loaded is a config error naming it.
TEST(CliTest, EnvsDescribesANamedPluginAndNamesOneThatCannotLoad) {
  const std::string plugin = std::string("plugin:") + RLSWARM_CARTPOLE_PLUGIN;
  const auto specs = Json("envs --json " + plugin);
  ASSERT_EQ(specs.size(), 1u) << specs;
  EXPECT_EQ(specs[0]["name"], plugin);
  EXPECT_EQ(specs[0]["observation"]["shape"], nlohmann::json({4}));
  EXPECT_EQ(specs[0]["action"]["n"], 2);
  EXPECT_EQ(specs[0]["max_episode_steps"], 500);
  // Evaluated like the built-in CartPole it reimplements: the same episodes.
  const auto ours =
      Json("evaluate --env " + plugin + " --policy random --episodes 5 --seed 3 --json");
  const auto theirs =
      Json("evaluate --env CartPole-v1 --policy random --episodes 5 --seed 3 --json");
  EXPECT_EQ(ours["mean_return"], theirs["mean_return"]);
  EXPECT_EQ(ours["mean_length"], theirs["mean_length"]);
  const CommandResult missing = Rlswarm("envs plugin:/no/such/env.so");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("/no/such/env.so"), std::string::npos) << missing.out;
}

TEST(CliTest, EvaluateRandomPolicyWorksForAllNineEnvs) {
  for (const char* name : kEnvs) {
    SCOPED_TRACE(name);
    const auto j = Json(std::string("evaluate --env ") + name +
                        " --policy random --episodes 3 --seed 1 --num-envs 2 --json");
    EXPECT_EQ(j["env"], name);
    EXPECT_EQ(j["episodes"], 3);
    for (const char* key :
         {"mean_return", "std_return", "min_return", "max_return", "mean_length"}) {
      EXPECT_TRUE(j[key].is_number()) << key;
    }
    EXPECT_LE(j["min_return"].get<double>(), j["mean_return"].get<double>());
    EXPECT_GE(j["max_return"].get<double>(), j["mean_return"].get<double>());
    EXPECT_GT(j["mean_length"].get<double>(), 0.0);
  }
}

TEST(CliTest, EvaluateResultsDoNotDependOnNumEnvs) {
  const auto a = Json(
      "evaluate --env MinAtar/Breakout --policy random --episodes 20 --seed 4 --num-envs 1 --json");
  const auto b = Json(
      "evaluate --env MinAtar/Breakout --policy random --episodes 20 --seed 4 --num-envs 9 --json");
  for (const char* key : {"mean_return", "std_return", "min_return", "max_return", "mean_length"}) {
    EXPECT_EQ(a[key], b[key]) << key;
  }
  const auto c =
      Json("evaluate --env MinAtar/Breakout --policy random --episodes 20 --seed 5 --json");
  EXPECT_NE(a["mean_length"], c["mean_length"]);
}

TEST(CliTest, UnknownEnvFailsAndListsTheKnownOnes) {
  const CommandResult run = Rlswarm("evaluate --env Pong --policy random --episodes 1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.out.find("Pong"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("MinAtar/Breakout"), std::string::npos) << run.out;
}

// Usage errors exit 2 like config errors, name what was not understood and
// suggest the nearest known spelling; help still exits 0.
TEST(CliTest, UsageErrorsExitTwoNameTheWordAndSuggestTheNearest) {
  CommandResult run = Rlswarm("lauch configs/cartpole.yaml", Captured::kStderr);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("unknown subcommand 'lauch'; did you mean 'launch'?"), std::string::npos)
      << run.out;

  run = Rlswarm("evaluate --env CartPole-v1 --episods 3", Captured::kStderr);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("unknown flag '--episods'; did you mean '--episodes'?"), std::string::npos)
      << run.out;

  // Nothing near enough: named, no suggestion.
  run = Rlswarm("evaluate --zzzzzzzz", Captured::kStderr);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--zzzzzzzz"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("did you mean"), std::string::npos) << run.out;

  run = Rlswarm("frobnicate", Captured::kStderr);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("unknown subcommand 'frobnicate'"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("did you mean"), std::string::npos) << run.out;

  EXPECT_EQ(Rlswarm("", Captured::kStderr).exit_code, 2);
  EXPECT_EQ(Rlswarm("--help", Captured::kStdout).exit_code, 0);
  EXPECT_EQ(Rlswarm("launch --help", Captured::kStdout).exit_code, 0);
}

TEST(CliTest, ConfigErrorsExitTwoAndNameTheKey) {
  const CommandResult run = Rlswarm("evaluate env.num_envs=-3");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("env.num_envs"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("command-line override"), std::string::npos) << run.out;
}

// Without a GPU asking the learner for CUDA fails at once with a config
// error that names CUDA and the key: on the 1.13 build because it has no
// CUDA, on the CUDA build because no GPU is visible (CUDA_VISIBLE_DEVICES
// hides any the machine has, so a GPU machine checks the same refusal).
// Neither hangs, aborts or reaches the rendezvous; the same for NCCL on the
// CPU.
TEST(CliTest, LearnerOnCudaWithoutAGpuExitsTwoNamingCuda) {
  const std::string config = std::string(RLSWARM_CONFIGS_DIR) + "/cartpole.yaml";
  // (cartpole.yaml checkpoints every N updates, which needs a checkpoint_dir.)
  const std::string learner = "learner --config " + config + " learner.checkpoint_interval=0";
  const CommandResult cuda = Rlswarm(learner + " learner.device=cuda", Captured::kStdoutAndStderr,
                                     {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(cuda.exit_code, 2) << cuda.out;
  EXPECT_NE(cuda.out.find("learner.device=cuda"), std::string::npos) << cuda.out;
  EXPECT_NE(cuda.out.find("CUDA"), std::string::npos) << cuda.out;
  const CommandResult nccl =
      Rlswarm(learner + " learner.device=cpu learner.backend=nccl --world-size 2");
  EXPECT_EQ(nccl.exit_code, 2) << nccl.out;
  EXPECT_NE(nccl.out.find("learner.backend=nccl needs learner.device=cuda"), std::string::npos)
      << nccl.out;
}

TEST(CliTest, PrintConfigShowsTheResolvedConfig) {
  const CommandResult run =
      Rlswarm(std::string("evaluate --config ") + RLSWARM_CONFIGS_DIR +
              "/cartpole.yaml --num-envs 3 evaluate.episodes=11 --print-config");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("num_envs: 3"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("episodes: 11"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("name: CartPole-v1"), std::string::npos) << run.out;
  // A map-valued key (env.kwargs) is one flow map; the sections after it stay
  // one key a line, as tools that read run directories' config.yaml expect.
  const CommandResult kwargs = Rlswarm(std::string("evaluate --config ") + RLSWARM_CONFIGS_DIR +
                                       "/cartpole.yaml env.name=plugin:" + RLSWARM_CARTPOLE_PLUGIN +
                                       " env.kwargs={\"a\":1} --print-config");
  EXPECT_EQ(kwargs.exit_code, 0) << kwargs.out;
  EXPECT_NE(kwargs.out.find("kwargs: {a: 1}"), std::string::npos) << kwargs.out;
  EXPECT_NE(kwargs.out.find("\nlaunch:\n"), std::string::npos) << kwargs.out;
}

TEST(CliTest, LogLinesCarryTheRoleAndGoToStderr) {
  const std::string err = Rlswarm("evaluate --episodes 1 --json", Captured::kStderr).out;
  EXPECT_NE(err.find("[evaluate "), std::string::npos) << err;
  EXPECT_NE(err.find(" I "), std::string::npos) << err;
}

TEST(CliTest, KeygenWritesAKeyPairAndRefusesToOverwriteIt) {
  std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "rlswarm_keygen_XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string prefix = dir + "/keys/server";  // keys/ does not exist yet
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };

  const nlohmann::json first = Json("keygen --json --out " + prefix);
  const std::string public_key = first["public_key"];
  EXPECT_EQ(public_key.size(), 40u);
  EXPECT_EQ(first["public_key_file"], prefix + ".key");
  EXPECT_EQ(first["secret_key_file"], prefix + ".key_secret");
  EXPECT_NE(read(prefix + ".key").find("public-key = \"" + public_key + "\""), std::string::npos);
  EXPECT_EQ(read(prefix + ".key").find("secret-key"), std::string::npos);
  EXPECT_NE(read(prefix + ".key_secret").find("secret-key = \""), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat((prefix + ".key_secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::string secret = read(prefix + ".key_secret");
  const CommandResult again = Rlswarm("keygen --out " + prefix);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(prefix + ".key"), std::string::npos) << again.out;
  EXPECT_EQ(read(prefix + ".key_secret"), secret);

  const nlohmann::json forced = Json("keygen --json --force --out " + prefix);
  EXPECT_NE(forced["public_key"], public_key);
  EXPECT_NE(read(prefix + ".key_secret"), secret);

  EXPECT_NE(Rlswarm("keygen").exit_code, 0);  // --out is required
  std::filesystem::remove_all(dir);
}

}  // namespace
