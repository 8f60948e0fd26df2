// The learner's watchdog in a real processes-mode run (`rlswarm launch`, two
// learner ranks on Gloo, the process supervisor): a SIGSTOPped rank is named
// by its peer, which exits with the watchdog's code, and the supervisor
// restarts the group; a group that only waits on replay for longer than the
// timeout is left alone.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "tests/run_logs.h"

namespace rlswarm {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::Incarnation;

// learner::kWatchdogExitCode (learner/dist/watchdog.h); integration tests link no
// learner code, so the documented number is written out.
constexpr int kWatchdogExitCode = 75;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

class WatchdogProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  void TearDown() override {
    // A stopped learner would otherwise wait for its SIGKILL (the launcher's
    // death sends one); continue it so it goes with the launcher at once.
    if (stopped_ > 0) ::kill(stopped_, SIGCONT);
  }
  std::unique_ptr<ChildProcess> Launch(std::vector<std::string> overrides) {
    std::vector<std::string> args = {RLSWARM_BINARY,
                                     "launch",
                                     std::string(RLSWARM_CONFIGS_DIR) + "/cartpole.yaml",
                                     "--run-dir",
                                     run_.string(),
                                     "launch.mode=processes",
                                     "launch.learner_ranks=2",
                                     "launch.target_return=null",
                                     "launch.episode_return_bound=null",
                                     "launch.max_wall_time_s=240",
                                     "launch.stop_grace_s=2",
                                     "launch.restart_backoff_s=0.2",
                                     "learner.watchdog_timeout_s=3"};
    args.insert(args.end(), overrides.begin(), overrides.end());
    return std::make_unique<ChildProcess>(args, dir_ + "/launch.log");
  }
  std::string LearnerLog(int rank) const {
    return ReadText(run_ / "logs" / ("learner-" + std::to_string(rank) + ".log"));
  }
  // The last learner/updates scalar of the run (weights version), or -1.
  double LastUpdates() const {
    std::ifstream in(run_ / "scalars.jsonl");
    double value = -1;
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("tag", "") == "learner/updates")
        value = j["value"].get<double>();
    }
    return value;
  }
  bool WatchdogsRunning() const {
    return LearnerLog(0).find("watchdog: heartbeats on udp://") != std::string::npos &&
           LearnerLog(1).find("watchdog: heartbeats on udp://") != std::string::npos;
  }

  testing::TempDir temp_{"watchdog_process_test"};
  const std::string dir_ = temp_.path();
  const fs::path run_ = fs::path(dir_) / "run";
  pid_t stopped_ = 0;
};

TEST_F(WatchdogProcessTest, AStoppedLearnerRankMakesItsPeerExitAndTheGroupRestarts) {
  auto launch = Launch({});
  // Training: both ranks are in their collectives every update.
  const auto training = [&] { return WatchdogsRunning() && LastUpdates() >= 50; };
  ASSERT_TRUE(WaitFor(training, 120s)) << launch->Log() << LearnerLog(0);
  ASSERT_EQ(Incarnation(run_, "learner-0").second, 1) << LearnerLog(0);
  stopped_ = Incarnation(run_, "learner-1").first;
  ASSERT_GT(stopped_, 0);
  ASSERT_EQ(::kill(stopped_, SIGSTOP), 0);

  // learner-0 names rank 1 and exits 75; the supervisor restarts both ranks.
  ASSERT_TRUE(WaitFor([&] { return Incarnation(run_, "learner-1").second >= 2; }, 90s))
      << launch->Log() << LearnerLog(0);
  const std::string log0 = LearnerLog(0);
  const auto alarm = log0.find("watchdog: rank 1 stopped: no heartbeat");
  EXPECT_NE(alarm, std::string::npos) << log0;
  if (alarm != std::string::npos)
    std::cout << log0.substr(alarm, log0.find('\n', alarm) - alarm) << "\n";
  EXPECT_NE(log0.find("exiting with code 75"), std::string::npos) << log0;
  // Which collective this rank was blocked in.
  EXPECT_NE(log0.find("this rank (0) is blocked in '"), std::string::npos) << log0;
  EXPECT_NE(launch->Log().find("learner-0 exited with code " + std::to_string(kWatchdogExitCode)),
            std::string::npos)
      << launch->Log();
  EXPECT_GE(Incarnation(run_, "learner-0").second, 2);
  stopped_ = 0;  // gone: the group restart took it down

  // The new group runs; the run stops cleanly.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string a = LearnerLog(0), b = LearnerLog(1);
        const std::string banner = "watchdog: heartbeats on udp://";
        auto count = [&](const std::string& s) {
          int n = 0;
          for (auto p = s.find(banner); p != std::string::npos; p = s.find(banner, p + 1)) ++n;
          return n;
        };
        return count(a) >= 2 && count(b) >= 2;
      },
      90s))
      << launch->Log() << LearnerLog(1);
  launch->Signal(SIGINT);
  const auto code = launch->Wait(120s);
  ASSERT_TRUE(code.has_value()) << launch->Log();
  EXPECT_EQ(*code, 0) << launch->Log();
}

TEST_F(WatchdogProcessTest, LearnerRanksThatReplayKeepsWaitingAreLeftAlone) {
  // Replay never gives a batch: the rate limiter allows 1e-9 samples per
  // insert, within a buffer of one sample (an actor fills a large
  // min_size_to_sample in seconds). Every rank waits, outside any
  // collective, for as long as the run lasts.
  auto launch = Launch({"replay.samples_per_insert=1e-9", "replay.error_buffer=1"});
  ASSERT_TRUE(WaitFor([&] { return WatchdogsRunning(); }, 120s)) << launch->Log();
  // Three watchdog timeouts of nothing but waiting.
  std::this_thread::sleep_for(9s);
  for (int r = 0; r < 2; ++r) {
    const std::string log = LearnerLog(r);
    EXPECT_EQ(log.find("watchdog: rank"), std::string::npos) << log;
    EXPECT_EQ(Incarnation(run_, "learner-" + std::to_string(r)).second, 1) << log;
  }
  launch->Signal(SIGINT);
  const auto code = launch->Wait(120s);
  ASSERT_TRUE(code.has_value()) << launch->Log();
  EXPECT_EQ(*code, 0) << launch->Log();
  const nlohmann::json summary = nlohmann::json::parse(ReadText(run_ / "summary.json"));
  EXPECT_EQ(summary["restarts"], 0) << summary.dump(2);
  EXPECT_EQ(summary["updates"], 0) << summary.dump(2);
}

}  // namespace
}  // namespace rlswarm
