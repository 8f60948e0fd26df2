#include "learner/checkpoint/async_checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "learner/algorithms/dqn_learner.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/dist/rendezvous.h"
#include "learner/testing/cartpole_replay.h"
#include "models/q_networks.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
namespace th = testing;

// A fresh directory per test, removed with everything in it.
struct TempDir : rlswarm::testing::TempDir {
  TempDir() : rlswarm::testing::TempDir("learner_async_ckpt") {}
};

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Captures what the default logger writes while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() {
    sink_->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

struct World1 {
  models::ModelSpec spec = models::MakeMlpSpec(models::MlpOptions{});
  std::shared_ptr<Communicator> comm = std::make_shared<Communicator>();
  ShardedModel model{spec, ShardedModelOptions{}, comm};
  std::unique_ptr<ShardedModel> target = model.MakeTarget();

  void Train(int steps) {
    for (int i = 0; i < steps; ++i) {
      model.ZeroGrad();
      model.Forward(at::randn({8, 4})).pow(2).mean().backward();
      model.Step();
      target->PolyakUpdate(model, 0.1);
    }
  }
};

// A gate the writer hook waits at until the test opens it.
class Gate {
 public:
  void Open() { open_.set_value(); }
  void Pass() const { opened_.wait(); }

 private:
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

// The writer is held before it writes while training changes every section;
// what it writes is still the state at Save(), byte for byte the synchronous
// checkpoint of that state.
TEST(AsyncCheckpointTest, SaveWhileTrainingWritesWhatASyncSaveWrites) {
  TempDir dir;
  World1 w;
  w.Train(3);
  SaveCheckpoint(dir.path() + "/sync", w.model, w.target.get(), {3, 7});
  Gate gate;
  AsyncCheckpointOptions o;
  o.root = dir.path() + "/async";
  o.writer_hook = [&gate](std::string_view stage, int64_t) {
    if (stage == "before_write") gate.Pass();
  };
  AsyncCheckpointer checkpointer(o, w.model, w.target.get(), {});
  const std::string async_dir = checkpointer.Save({3, 7});
  w.Train(2);
  gate.Open();
  ASSERT_TRUE(checkpointer.Wait(std::chrono::seconds(30)));
  const std::optional<AsyncSaveReport> report = checkpointer.TakeFinished();
  ASSERT_TRUE(report && report->ok) << (report ? report->error : "no report");
  EXPECT_FALSE(checkpointer.TakeFinished().has_value());  // reported once

  const std::string sync_dir = dir.path() + "/sync/update-000000000003";
  EXPECT_EQ(async_dir, dir.path() + "/async/update-000000000003");
  EXPECT_EQ(FindLatestCheckpoint(dir.path() + "/async"), async_dir);
  EXPECT_EQ(Bytes(async_dir + "/manifest.json"), Bytes(sync_dir + "/manifest.json"));
  EXPECT_EQ(Bytes(async_dir + "/shard-0.bin"), Bytes(sync_dir + "/shard-0.bin"));
  World1 fresh;
  EXPECT_EQ(LoadCheckpoint(async_dir, fresh.model, fresh.target.get()).update_count, 3);
  EXPECT_EQ(fresh.model.optimizer().step(), 3);
}

// A second Save() while the first is held waits for it: when it returns,
// the first is published, and both end up complete.
TEST(AsyncCheckpointTest, ASaveRequestedWhileOneIsInFlightWaitsForIt) {
  TempDir dir;
  World1 w;
  Gate gate;
  AsyncCheckpointOptions o;
  o.root = dir.path();
  o.keep = 0;
  o.writer_hook = [&gate](std::string_view stage, int64_t update) {
    if (stage == "before_publish" && update == 1) gate.Pass();
  };
  AsyncCheckpointer checkpointer(o, w.model, w.target.get(), {});
  checkpointer.Save({1, 0});
  EXPECT_TRUE(checkpointer.in_flight());
  w.Train(1);
  std::future<bool> second = std::async(std::launch::async, [&] {
    checkpointer.Save({2, 0});
    // Save() returned: the first save must have finished.
    return fs::exists(dir.path() + "/update-000000000001/manifest.json");
  });
  // Opens the gate only once the second Save() is known to wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (checkpointer.saves_waited() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(checkpointer.saves_waited(), 1);
  gate.Open();
  EXPECT_TRUE(second.get());
  ASSERT_TRUE(checkpointer.Wait(std::chrono::seconds(30)));
  EXPECT_EQ(FindLatestCheckpoint(dir.path()), dir.path() + "/update-000000000002");
  EXPECT_FALSE(ValidateCheckpoint(dir.path() + "/update-000000000001").has_value());
}

// Each save logs the training thread's stall; a writer that fails logs
// why, and the previous checkpoint stays the newest loadable one.
TEST(AsyncCheckpointTest, TheStallIsLoggedAndAFailedWriteKeepsThePreviousCheckpoint) {
  TempDir dir;
  World1 w;
  LogCapture log;
  AsyncCheckpointOptions o;
  o.root = dir.path();
  AsyncCheckpointer checkpointer(o, w.model, w.target.get(), {});
  checkpointer.Save({1, 0});
  ASSERT_TRUE(checkpointer.Wait(std::chrono::seconds(30)));
  std::optional<AsyncSaveReport> first = checkpointer.TakeFinished();
  ASSERT_TRUE(first && first->ok);
  EXPECT_GT(first->bytes, 0);
  EXPECT_GE(first->stall_seconds, first->wait_seconds);
  EXPECT_NE(log.text().find("checkpoint update 1: training blocked"), std::string::npos)
      << log.text();

  // update-2 cannot be created: a file stands in its place.
  std::ofstream(dir.path() + "/update-000000000002") << "in the way";
  w.Train(1);
  checkpointer.Save({2, 0});
  ASSERT_TRUE(checkpointer.Wait(std::chrono::seconds(30)));
  std::optional<AsyncSaveReport> second = checkpointer.TakeFinished();
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->ok);
  EXPECT_EQ(checkpointer.saves_failed(), 1);
  EXPECT_NE(log.text().find("checkpoint update 2 failed on rank 0"), std::string::npos)
      << log.text();
  EXPECT_EQ(FindLatestCheckpoint(dir.path()), dir.path() + "/update-000000000001");
}

// The learner saves asynchronously every 10 updates and logs, per save, the
// stall and the updates/s while the writer ran against those without it.
TEST(AsyncCheckpointTest, TheLearnerLogsEachSavesStallAndTheUpdatesPerSecondLost) {
  TempDir dir;
  LogCapture log;  // before the replay shard: its threads log while it lives
  th::CartPoleReplay replay(500);
  ApeXOptions o;
  o.batch_size = 32;
  o.publish_interval = 0;
  o.log_interval = std::chrono::milliseconds(0);
  o.checkpoint_dir = dir.path();
  o.checkpoint_interval = 10;
  o.sampler.endpoints = {replay.endpoint()};
  {
    DqnLearner learner(models::MakeMlpSpec(models::MlpOptions{}), o, {},
                       std::make_shared<Communicator>());
    ASSERT_NE(learner.async_checkpointer(), nullptr);
    int updates = 0;
    while (updates < 30) updates += learner.Update();
    // The explicit save waits for the one in flight, then writes now.
    EXPECT_EQ(learner.SaveCheckpoint(), dir.path() + "/update-000000000030");
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("checkpoint update 10: training blocked"), std::string::npos) << text;
  EXPECT_NE(text.find("checkpoint update 10 published after"), std::string::npos) << text;
  EXPECT_NE(text.find("updates/s lost"), std::string::npos) << text;
  EXPECT_FALSE(ValidateCheckpoint(dir.path() + "/update-000000000030").has_value());

  // async_checkpoint: false writes synchronously.
  o.async_checkpoint = false;
  DqnLearner sync(models::MakeMlpSpec(models::MlpOptions{}), o, {},
                  std::make_shared<Communicator>());
  EXPECT_EQ(sync.async_checkpointer(), nullptr);
}

// Two ranks, real Gloo and the real TCPStore: the asynchronous checkpoint of
// a state is byte for byte the synchronous one, though both ranks trained on
// while their writers were held.
TEST(AsyncCheckpointTest, TwoRanksAgreeThroughTheStoreAndWriteWhatASyncSaveWrites) {
  TempDir dir;
  for (const auto& e :
       th::RunWorkers("async_ckpt_match", 2, dir.path(), std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir.path() + "/rank0.err")
                              << th::ReadText(dir.path() + "/rank1.err");
  }
  EXPECT_EQ(th::ReadText(dir.path() + "/match.rank0.txt"), "1 ");
  EXPECT_EQ(th::ReadText(dir.path() + "/match.rank1.txt"), "1 ");
  const std::string sync_dir = dir.path() + "/sync/update-000000000005";
  const std::string async_dir = dir.path() + "/async/update-000000000005";
  EXPECT_FALSE(ValidateCheckpoint(async_dir).has_value());
  for (const char* file : {"manifest.json", "shard-0.bin", "shard-1.bin"}) {
    EXPECT_EQ(Bytes(async_dir + "/" + file), Bytes(sync_dir + "/" + file)) << file;
  }
}

// Spawns `scenario` at `world` ranks, waits until the last rank's writer
// says it is paused, kills that rank (SIGKILL), and waits (60 s at most) for
// the others to exit 0. Returns false (with a failure) when the pause never
// came.
bool RunAndKillTheLastRank(const std::string& dir, int world,
                           const std::string& scenario = "async_ckpt_kill") {
  uint16_t port = 0;
  auto store = HostStore(0, std::chrono::milliseconds(20000), &port);
  std::vector<std::unique_ptr<rlswarm::testing::ChildProcess>> ranks;
  for (int r = 0; r < world; ++r) {
    rlswarm::testing::ChildProcessOptions o;
    o.program = "/proc/self/exe";
    o.out = rlswarm::testing::ChildProcessOptions::Sink::kCapture;
    ranks.push_back(std::make_unique<rlswarm::testing::ChildProcess>(
        std::vector<std::string>{"learner_tests", "--rlswarm-worker", scenario, std::to_string(r),
                                 std::to_string(world), std::to_string(port), dir},
        o));
  }
  rlswarm::testing::ChildProcess& last = *ranks.back();
  std::optional<std::string> line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((line = last.ReadLine(std::chrono::seconds(60))) && *line != "paused" &&
         std::chrono::steady_clock::now() < deadline) {
  }
  if (!line || *line != "paused") {
    ADD_FAILURE() << "the writer never paused: " << th::ReadText(dir + "/rank0.err");
    return false;
  }
  last.Kill();
  for (int r = 0; r + 1 < world; ++r) {
    EXPECT_EQ(ranks[r]->Wait(std::chrono::seconds(60)), 0) << th::ReadText(dir + "/rank0.err");
  }
  return true;
}

void ExpectRestartLoadsUpdate2(const std::string& dir, int world) {
  const std::string ckpt = dir + "/ckpt";
  EXPECT_EQ(FindLatestCheckpoint(ckpt), ckpt + "/update-000000000002");
  EXPECT_TRUE(fs::exists(ckpt + "/update-000000000004/shard-0.bin"));     // written...
  EXPECT_FALSE(fs::exists(ckpt + "/update-000000000004/manifest.json"));  // ...never published
  for (const auto& e : th::RunWorkers("async_ckpt_resume", world, dir, std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir + "/rank0.err");
  }
  EXPECT_EQ(th::ReadText(dir + "/resumed.txt"), "2");
  EXPECT_EQ(th::ReadDoubles(dir + "/resumed.bin"), th::ReadDoubles(dir + "/kill_ref.bin"));
}

// kill -9 of the process while its writer holds every shard but has not
// written the manifest: the restart loads the previous checkpoint.
TEST(AsyncCheckpointTest, AProcessKilledDuringTheWriteRestartsFromThePreviousCheckpoint) {
  TempDir dir;
  if (!RunAndKillTheLastRank(dir.path(), 1)) return;
  ExpectRestartLoadsUpdate2(dir.path(), 1);
}

// kill -9 of rank 1 after its shard is durable but before it reports: rank
// 0's writer times out, logs and publishes nothing; the restart at two ranks
// loads the previous checkpoint.
TEST(AsyncCheckpointTest, APeerKilledDuringTheWriteLeavesThePreviousCheckpointLoadable) {
  TempDir dir;
  if (!RunAndKillTheLastRank(dir.path(), 2)) return;
  const std::string rank0 = th::ReadText(dir.path() + "/kill.rank0.txt");
  EXPECT_EQ(rank0.rfind("0 ", 0), 0u) << rank0;
  EXPECT_NE(rank0.find("rank 1 did not report its shard"), std::string::npos) << rank0;
  ExpectRestartLoadsUpdate2(dir.path(), 2);
}

// Rank 0's destructor does not sit out the agreement timeout (10 min) behind
// a rank that never reports: it cancels the wait, and nothing is published.
TEST(AsyncCheckpointTest, DestroyingTheCheckpointerCancelsTheWaitForAPeer) {
  TempDir dir;
  if (!RunAndKillTheLastRank(dir.path(), 2, "async_ckpt_cancel")) return;
  EXPECT_EQ(th::ReadText(dir.path() + "/cancel.rank0.txt"), "returned");
  EXPECT_FALSE(fs::exists(dir.path() + "/ckpt/update-000000000002/manifest.json"));
  EXPECT_EQ(FindLatestCheckpoint(dir.path() + "/ckpt"), std::nullopt);
}

}  // namespace
}  // namespace rlswarm::learner
