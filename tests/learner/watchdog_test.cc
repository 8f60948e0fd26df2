// The watchdog's options, and real 2-rank Gloo groups of child processes in
// which one rank is stopped with SIGSTOP, or the ranks only wait. Its rules
// and its record of the collectives in flight are tested without LibTorch in
// learner/runtime/heartbeat_test.cc.

#include "learner/dist/watchdog.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/errors.h"
#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "learner/dist/rendezvous.h"
#include "learner/runtime/heartbeat.h"
#include "learner/runtime/in_flight_collectives.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;

TEST(WatchdogOptionsTest, RejectsBadValues) {
  WatchdogOptions o;
  EXPECT_NO_THROW(o.Validate());
  EXPECT_EQ(o.EffectiveInterval(), 1000ms);
  o.timeout = 0ms;
  EXPECT_THROW(o.Validate(), InvalidArgument);
  o.timeout = 600ms;
  EXPECT_EQ(o.EffectiveInterval(), 100ms);
  o.interval = 600ms;
  EXPECT_THROW(o.Validate(), InvalidArgument);
  EXPECT_EQ(LocalAddressTowards("127.0.0.1"), "127.0.0.1");
}

// Two ranks of a real Gloo group as child processes of this test.
class WatchdogProcessTest : public ::testing::Test {
 protected:
  void Spawn(const std::string& scenario) {
    uint16_t port = 0;
    store_ = HostStore(0, 20s, &port);
    rlswarm::testing::ChildProcessOptions options;
    options.program = "/proc/self/exe";
    options.out = options.err = rlswarm::testing::ChildProcessOptions::Sink::kCapture;
    for (int r = 0; r < 2; ++r) {
      options.log_path = dir_ + "/rank" + std::to_string(r) + ".log";
      ranks_.push_back(std::make_unique<rlswarm::testing::ChildProcess>(
          std::vector<std::string>{"learner_tests", "--rlswarm-worker", scenario, std::to_string(r),
                                   "2", std::to_string(port), dir_},
          options));
    }
  }
  void TearDown() override {
    // A stopped rank is continued first so that nothing waits on it; the
    // ChildProcess destructors then SIGKILL and reap what is left.
    for (auto& rank : ranks_) rank->Signal(SIGCONT);
  }
  std::string Alarm(int rank) const {
    return testing::ReadText(dir_ + "/alarm.rank" + std::to_string(rank) + ".txt");
  }

  rlswarm::testing::TempDir temp_{"watchdog_test"};
  const std::string dir_ = temp_.path();
  c10::intrusive_ptr<c10d::Store> store_;
  std::vector<std::unique_ptr<rlswarm::testing::ChildProcess>> ranks_;
};

TEST_F(WatchdogProcessTest, AStoppedRankIsNamedAndItsPeerExitsWithTheWatchdogCode) {
  Spawn("watchdog_stop");
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(
        rlswarm::testing::WaitForFileLine(dir_ + "/ready.rank" + std::to_string(r), 60s).empty())
        << ranks_[r]->Log();
  }
  ranks_[1]->Signal(SIGSTOP);
  // The group's timeout is 60 s: an exit well before it is the watchdog's.
  const std::optional<int> code = ranks_[0]->Wait(30s);
  ASSERT_TRUE(code.has_value()) << "rank 0 did not notice\n" << ranks_[0]->Log();
  EXPECT_EQ(*code, kWatchdogExitCode) << ranks_[0]->Log();
  const std::string alarm = Alarm(0);
  EXPECT_NE(alarm.find("rank 1 stopped"), std::string::npos) << alarm;
  // Which collective: the one rank 1 last reported and the one rank 0 is in.
  EXPECT_NE(alarm.find("test all-reduce"), std::string::npos) << alarm;
  EXPECT_NE(alarm.find("this rank (0) is blocked in"), std::string::npos) << alarm;
  EXPECT_TRUE(ranks_[1]->running());
}

TEST_F(WatchdogProcessTest, RanksThatOnlyWaitLongerThanTheTimeoutAreLeftAlone) {
  Spawn("watchdog_wait");
  for (int r = 0; r < 2; ++r) {
    const std::optional<int> code = ranks_[r]->Wait(90s);
    ASSERT_TRUE(code.has_value()) << ranks_[r]->Log();
    EXPECT_EQ(*code, 0) << ranks_[r]->Log() << Alarm(r);
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/alarm.rank" + std::to_string(r) + ".txt"))
        << Alarm(r);
  }
}

}  // namespace
}  // namespace rlswarm::learner
