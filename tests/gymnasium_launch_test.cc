// `rlswarm launch` and `rlswarm evaluate` on Gymnasium envs, as users run
// them: Gymnasium's CartPole solved in both launch modes and its best policy
// evaluated; an env that raises now and then (the actor restarts its envs and
// the run goes on); a hung env that must not stall the launch's stop; config
// errors (exit 2). Needs the repository's .venv/ (scripts/setup.sh --python);
// skipped without it.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/testing/child_process.h"
#include "common/testing/files.h"

namespace rlswarm {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::ChildProcess;
using testing::ChildProcessOptions;

class GymnasiumLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(RLSWARM_TEST_PYTHON)) {
      GTEST_SKIP() << "no " << RLSWARM_TEST_PYTHON << " (scripts/setup.sh --python makes it)";
    }
  }

  std::unique_ptr<ChildProcess> Run(std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), RLSWARM_BINARY);
    ChildProcessOptions o;
    o.log_path = dir_ + "/" + log;
    o.out = o.err = ChildProcessOptions::Sink::kCapture;
    // The scripted envs' module, and the venv's Python without env.python.
    o.env = {std::string("PYTHONPATH=") + RLSWARM_TEST_ENVS_DIR,
             std::string("VIRTUAL_ENV=") +
                 fs::path(RLSWARM_TEST_PYTHON).parent_path().parent_path().string()};
    return std::make_unique<ChildProcess>(args, o);
  }
  static Json ReadJson(const fs::path& path) {
    std::ifstream in(path);
    return Json::parse(in);
  }
  static std::string ReadText(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Width and height from a PNG's IHDR (big-endian, at bytes 16 and 20);
  // {0, 0} if the file cannot be read.
  static std::pair<int, int> PngSize(const fs::path& path) {
    std::ifstream png(path, std::ios::binary);
    unsigned char header[24] = {};
    if (!png.read(reinterpret_cast<char*>(header), sizeof(header))) return {0, 0};
    const auto be32 = [&](int at) {
      return (header[at] << 24) | (header[at + 1] << 16) | (header[at + 2] << 8) | header[at + 3];
    };
    return {be32(16), be32(20)};
  }
  static int CountFiles(const fs::path& dir) {
    int files = 0;
    for (const auto& f : fs::directory_iterator(dir)) files += f.is_regular_file();
    return files;
  }
  static std::string Config(const std::string& name) {
    return std::string(RLSWARM_CONFIGS_DIR) + "/" + name;
  }

  testing::TempDir temp_{"gymnasium_launch_test"};
  const std::string dir_ = temp_.path();
};

TEST_F(GymnasiumLaunchTest, GymnasiumCartPoleSolvesInBothModesAndItsBestPolicyEvaluates) {
  for (const std::string mode : {"embedded", "processes"}) {
    SCOPED_TRACE(mode);
    const fs::path run = fs::path(dir_) / ("run-" + mode);
    auto launch =
        Run({"launch", Config("gymnasium_cartpole.yaml"), "--run-dir", run.string(),
             "launch.mode=" + mode, "launch.max_wall_time_s=240", "launch.metrics_port=0"},
            "launch-" + mode + ".log");
    const auto code = launch->Wait(300s);
    ASSERT_TRUE(code.has_value()) << launch->Log();
    ASSERT_EQ(*code, 0) << launch->Log();
    const Json summary = ReadJson(run / "summary.json");
    EXPECT_TRUE(summary["solved"].get<bool>()) << summary.dump(2);
    // Held-out episodes of the best policy: far above random (~22).
    EXPECT_GE(summary["heldout_eval_mean_return"].get<double>(), 400) << summary.dump(2);
    if (mode != "embedded") continue;
    auto evaluate = Run({"evaluate", "--config", Config("gymnasium_cartpole.yaml"), "--checkpoint",
                         (run / "policies" / "best").string(), "--json", "evaluate.policy=q",
                         "evaluate.episodes=20"},
                        "evaluate.log");
    const auto eval_code = evaluate->Wait(120s);
    ASSERT_TRUE(eval_code.has_value()) << evaluate->Log();
    ASSERT_EQ(*eval_code, 0) << evaluate->Log();
    const std::string log = evaluate->Log();
    const Json result = Json::parse(log.substr(log.find('{')));
    EXPECT_EQ(result["env"], "gymnasium:CartPole-v1");
    EXPECT_GE(result["mean_return"].get<double>(), 400) << log;

    // --record: frames from Gymnasium's own renderer (600x400 for CartPole).
    const fs::path frames = fs::path(dir_) / "frames";
    auto record = Run({"evaluate", "--config", Config("gymnasium_cartpole.yaml"), "--checkpoint",
                       (run / "policies" / "best").string(), "evaluate.policy=q",
                       "evaluate.episodes=2", "env.num_envs=2", "--record", frames.string()},
                      "record.log");
    const auto record_code = record->Wait(120s);
    ASSERT_TRUE(record_code.has_value()) << record->Log();
    ASSERT_EQ(*record_code, 0) << record->Log();
    ASSERT_TRUE(fs::exists(frames / "episode-0000.gif")) << record->Log();
    EXPECT_EQ(PngSize(frames / "episode-0000" / "frame-00000.png"), std::make_pair(600, 400))
        << record->Log();
    // Hundreds of frames: the policy balances the pole (>= 400 steps above).
    EXPECT_GE(CountFiles(frames / "episode-0000"), 300);
  }
}

// The shipped Pong config end to end, shortened: ale-py's vector env in the
// actor, frames shared in replay (and in its checkpoints), evaluations on
// per-episode seeds (ale-py has no disabled autoreset), and --record drawing
// the frames the agent sees (ale-py's vector env takes no render_mode).
TEST_F(GymnasiumLaunchTest, PongLaunchesEvaluatesAndRecords) {
  const fs::path run = fs::path(dir_) / "run";
  auto launch =
      Run({"launch", Config("atari_pong.yaml"), "--run-dir", run.string(), "launch.mode=embedded",
           "launch.max_wall_time_s=40", "launch.metrics_port=0", "replay.capacity=4000",
           "replay.min_size_to_sample=500", "replay.checkpoint_dir=" + (run / "replay").string(),
           "replay.checkpoint_interval_s=10", "launch.eval_interval_s=15", "launch.eval_episodes=1",
           "launch.eval_num_envs=1", "launch.heldout_eval_episodes=1"},
          "launch.log");
  const auto code = launch->Wait(240s);
  ASSERT_TRUE(code.has_value()) << launch->Log();
  ASSERT_EQ(*code, 0) << launch->Log();
  const Json summary = ReadJson(run / "summary.json");
  EXPECT_GT(summary["updates"].get<std::int64_t>(), 0) << summary;
  EXPECT_EQ(summary["heldout_eval_episodes"].get<std::int64_t>(), 1) << summary;
  // A random-ish policy loses Pong: -21 up to about -15, never a positive score.
  EXPECT_LE(summary["final_eval_mean_return"].get<double>(), 0) << summary;
  // Replay checkpoints hold each frame once: a transition costs ~7 KB, not 56.
  const std::string log = ReadText(run / "logs" / "launch.log");
  EXPECT_NE(log.find("replay checkpoint"), std::string::npos) << log;
  std::uintmax_t largest = 0;
  for (const auto& f : fs::recursive_directory_iterator(run / "replay")) {
    if (f.path().filename() == "data.bin") largest = std::max(largest, f.file_size());
  }
  EXPECT_GT(largest, 0u);
  EXPECT_LT(largest, 4000u * 16 * 1024) << "4000 transitions";

  const fs::path frames = fs::path(dir_) / "frames";
  auto record = Run({"evaluate", "--config", Config("atari_pong.yaml"), "--checkpoint",
                     (run / "policies" / "best").string(), "evaluate.policy=q",
                     "evaluate.episodes=1", "env.num_envs=1", "--record", frames.string()},
                    "record.log");
  const auto record_code = record->Wait(180s);
  ASSERT_TRUE(record_code.has_value()) << record->Log();
  ASSERT_EQ(*record_code, 0) << record->Log();
  EXPECT_EQ(PngSize(frames / "episode-0000" / "frame-00000.png"), std::make_pair(84, 84))
      << record->Log();
  EXPECT_GE(CountFiles(frames / "episode-0000"), 500);  // a whole game of Pong
}

TEST_F(GymnasiumLaunchTest, EnvsDescribesAGymnasiumEnvAsTheActorsWouldMakeIt) {
  auto envs = Run({"envs", "gymnasium:ALE/Pong-v5", "--kwargs", R"({"stack_num": 4})"}, "envs.log");
  const auto code = envs->Wait(60s);
  ASSERT_TRUE(code.has_value()) << envs->Log();
  EXPECT_EQ(*code, 0) << envs->Log();
  EXPECT_NE(envs->Log().find("(4, 84, 84) uint8      discrete(6)"), std::string::npos)
      << envs->Log();
}

// An env that cannot draw itself is named when --record asks for frames,
// before any checkpoint is read.
TEST_F(GymnasiumLaunchTest, RecordingAnEnvWithoutFramesIsAConfigErrorNamingTheEnv) {
  auto record = Run({"evaluate", "--config", Config("gymnasium_cartpole.yaml"), "--checkpoint",
                     (fs::path(dir_) / "no-such-checkpoint").string(), "evaluate.policy=q",
                     "evaluate.episodes=1", "env.name=gymnasium:rlswarm_test_envs:Counter-v0",
                     "--record", (fs::path(dir_) / "frames").string()},
                    "record.log");
  const auto code = record->Wait(120s);
  ASSERT_TRUE(code.has_value()) << record->Log();
  EXPECT_EQ(*code, 2) << record->Log();
  EXPECT_NE(record->Log().find("rlswarm_test_envs:Counter-v0"), std::string::npos) << record->Log();
  EXPECT_NE(record->Log().find("render_mode"), std::string::npos) << record->Log();
}

// Each of the actor's envs raises on its 1500th step: the actor logs the
// traceback, restarts its envs in a new worker and keeps feeding the learner.
TEST_F(GymnasiumLaunchTest, AnEnvThatRaisesIsRestartedAndTheRunGoesOn) {
  const fs::path run = fs::path(dir_) / "run";
  auto launch =
      Run({"launch", Config("cartpole.yaml"), "--run-dir", run.string(), "launch.mode=embedded",
           "env.name=gymnasium:rlswarm_test_envs:Faulty-v0", "env.num_envs=4",
           R"(env.kwargs={"fault": "raise", "at_step": 1500})", "launch.max_wall_time_s=25",
           "launch.target_return=1e9", "launch.episode_return_bound=1e9", "launch.metrics_port=0"},
          "launch.log");
  const auto code = launch->Wait(120s);
  ASSERT_TRUE(code.has_value()) << launch->Log();
  EXPECT_EQ(*code, 0) << launch->Log();
  // The console shows errors; the run's log has everything.
  const std::string log = ReadText(run / "logs" / "launch.log");
  EXPECT_NE(log.find("env failure (1 in a row)"), std::string::npos) << log;
  EXPECT_NE(log.find("scripted failure in Faulty-v0"), std::string::npos) << log;
  EXPECT_NE(log.find("envs restarted (a Gymnasium env in a new worker)"), std::string::npos) << log;
  const Json summary = ReadJson(run / "summary.json");
  EXPECT_EQ(summary["stop_reason"], "max_wall_time") << summary.dump(2);
  // More env steps than one worker's life: the envs ran on after the failure.
  EXPECT_GT(summary["env_steps"].get<std::int64_t>(), 4 * 1500) << summary.dump(2);
  EXPECT_GT(summary["updates"].get<std::int64_t>(), 0);
}

// An env that hangs in step: the launch still stops at its wall time.
TEST_F(GymnasiumLaunchTest, AHungEnvDoesNotStallTheStop) {
  const fs::path run = fs::path(dir_) / "run";
  const auto start = std::chrono::steady_clock::now();
  auto launch =
      Run({"launch", Config("cartpole.yaml"), "--run-dir", run.string(), "launch.mode=embedded",
           "env.name=gymnasium:rlswarm_test_envs:Faulty-v0", "env.num_envs=2",
           R"(env.kwargs={"fault": "sleep", "at_step": 50})", "launch.max_wall_time_s=8",
           "launch.target_return=1e9", "launch.episode_return_bound=1e9", "launch.metrics_port=0"},
          "launch.log");
  const auto code = launch->Wait(120s);
  ASSERT_TRUE(code.has_value()) << launch->Log();
  EXPECT_EQ(*code, 0) << launch->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  EXPECT_EQ(ReadJson(run / "summary.json")["stop_reason"], "max_wall_time");
}

TEST_F(GymnasiumLaunchTest, AnUnsupportedSpaceOrAMissingModuleIsAConfigError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gymnasium:rlswarm_test_envs:DictObs-v0", "Dict"},
      {"gymnasium:no_such_module_x:Env-v0", "cannot import module 'no_such_module_x'"},
  };
  for (const auto& [name, expected] : cases) {
    SCOPED_TRACE(name);
    auto launch =
        Run({"launch", Config("cartpole.yaml"), "--run-dir", dir_ + "/never", "env.name=" + name},
            "config-error.log");
    const auto code = launch->Wait(60s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 2) << launch->Log();
    EXPECT_NE(launch->Log().find(expected), std::string::npos) << launch->Log();
    EXPECT_NE(launch->Log().find("env"), std::string::npos) << launch->Log();
  }
}

}  // namespace
}  // namespace rlswarm
