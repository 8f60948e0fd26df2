// The replay service as users run it: `rlswarm replay` shard processes,
// writers and samplers in other processes, kill -9, SIGTERM and a full disk.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "replay/service/protocol.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::ChildProcess;

class ReplayProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  void TearDown() override { shards_.clear(); }

  // Starts shard `index` of `num_shards` on a free port (or `bind`), with
  // checkpoints in <dir>/ckpt unless `checkpoint_dir` says otherwise;
  // returns its endpoint.
  std::string StartShard(int index, int num_shards, const std::string& checkpoint_dir = "",
                         const std::string& bind = "tcp://127.0.0.1:*",
                         std::vector<std::string> extra = {}) {
    const std::string endpoint_file =
        dir_ + "/endpoint-" + std::to_string(index) + "-" + std::to_string(starts_);
    std::vector<std::string> argv = {
        RLSWARM_BINARY, "replay", "--config", std::string(RLSWARM_CONFIGS_DIR) + "/cartpole.yaml",
        "--shard", std::to_string(index), "--bind", bind, "--endpoint-file", endpoint_file,
        "replay.num_shards=" + std::to_string(num_shards),
        // Not cartpole.yaml's paced, uniform table (tuned for training):
        // these tests need priorities and no rate limiter.
        "replay.selector=prioritized", "replay.samples_per_insert=null",
        "replay.min_size_to_sample=1", "replay.capacity=300000", "replay.checkpoint_interval_s=0",
        "replay.checkpoint_dir=" + (checkpoint_dir.empty() ? dir_ + "/ckpt" : checkpoint_dir)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto child = std::make_unique<ChildProcess>(
        argv, dir_ + "/shard-" + std::to_string(index) + "-" + std::to_string(starts_++) + ".log");
    const std::string endpoint = testing::WaitForFileLine(endpoint_file, 20s);
    EXPECT_FALSE(endpoint.empty()) << child->Log();
    if (static_cast<int>(shards_.size()) <= index) shards_.resize(index + 1);
    shards_[index] = std::move(child);
    return endpoint;
  }

  std::unique_ptr<ChildProcess> LoadClient(const std::vector<std::string>& endpoints, int id,
                                           std::int64_t items, int sample_rounds) {
    std::string joined;
    for (const auto& e : endpoints) joined += (joined.empty() ? "" : ",") + e;
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{RLSWARM_LOAD_CLIENT, "--endpoints", joined, "--client-id",
                                 std::to_string(id), "--items", std::to_string(items),
                                 "--sample-rounds", std::to_string(sample_rounds)},
        dir_ + "/client-" + std::to_string(id) + ".log");
  }

  static replay::ReplaySampler Sampler(const std::vector<std::string>& endpoints) {
    replay::ReplaySamplerOptions o;
    o.endpoints = endpoints;
    o.timeout = 10s;
    return replay::ReplaySampler(o);
  }

  testing::TempDir temp_{"replay_process"};
  const std::string dir_ = temp_.path();
  int starts_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> shards_;
};

TEST_F(ReplayProcessTest, SeveralProcessesInsertSampleAndUpdatePrioritiesAcrossShards) {
  const std::vector<std::string> endpoints = {StartShard(0, 2), StartShard(1, 2)};
  std::vector<std::unique_ptr<ChildProcess>> clients;
  for (int id = 1; id <= 3; ++id) clients.push_back(LoadClient(endpoints, id, 3000, 20));
  for (auto& client : clients) {
    const auto code = client->Wait(60s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 0) << client->Log();
    const Json report = Json::parse(client->Log().substr(client->Log().rfind('{')));
    EXPECT_EQ(report["acknowledged"], 3000);
    EXPECT_EQ(report["corrupt"], 0);
    EXPECT_EQ(report["updated"], report["sampled"]);
  }
  replay::ReplaySampler sampler = Sampler(endpoints);
  const auto totals = sampler.Totals();
  EXPECT_EQ(totals[0].size + totals[1].size, 9000);
  EXPECT_GT(totals[0].size, 0);
  EXPECT_GT(totals[1].size, 0);
  // Every client's priorities (1 + client id) landed on the shard that owns
  // the key: the shards' histograms count them.
  std::int64_t with_priority = 0;
  for (int s = 0; s < 2; ++s) {
    const Json info = Json::parse(sampler.Info(s));
    EXPECT_EQ(info["table"]["counters"]["priorities_updated"].get<std::int64_t>() > 0, true);
    with_priority += info["table"]["counters"]["priorities_updated"].get<std::int64_t>();
    EXPECT_EQ(info["server"]["malformed"], 0);
  }
  EXPECT_EQ(with_priority, 3 * 20 * 64);
}

TEST_F(ReplayProcessTest, SigtermWritesALastCheckpointThatARestartResumes) {
  std::string endpoint = StartShard(0, 1);
  auto client = LoadClient({endpoint}, 1, 500, 0);
  ASSERT_EQ(client->Wait(30s), 0) << client->Log();
  shards_[0]->Signal(SIGTERM);
  ASSERT_EQ(shards_[0]->Wait(20s), 0) << shards_[0]->Log();
  endpoint = StartShard(0, 1);
  replay::ReplaySampler sampler = Sampler({endpoint});
  EXPECT_EQ(sampler.Totals()[0].size, 500);
  EXPECT_NE(shards_[0]->Log().find("resumed from"), std::string::npos) << shards_[0]->Log();
}

TEST_F(ReplayProcessTest, KillNineDuringCheckpointsNeverLeavesAnUnloadableShard) {
  std::string endpoint = StartShard(0, 1);
  auto client = LoadClient({endpoint}, 1, 200000, 0);
  ASSERT_EQ(client->Wait(120s), 0) << client->Log();
  {
    replay::ReplaySampler sampler = Sampler({endpoint});
    EXPECT_EQ(Json::parse(sampler.Checkpoint(0))["items"], 200000);
  }
  bool killed_mid_write = false;
  for (int round = 0; round < 4; ++round) {
    {
      // Ask for a checkpoint and kill the shard while it writes.
      rpc::ClientOptions o;
      o.endpoint = endpoint;
      rpc::Client client_socket(o);
      // Kill the moment the new checkpoint's directory appears: its data
      // is being written and its manifest is not there yet.
      auto count_dirs = [&] {
        return std::distance(fs::directory_iterator(dir_ + "/ckpt/shard-0"),
                             fs::directory_iterator{});
      };
      const auto before = count_dirs();
      auto pending = client_socket.Call(replay::protocol::kCheckpoint, {});
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (count_dirs() == before && std::chrono::steady_clock::now() < deadline) {
      }
      shards_[0]->Signal(SIGKILL);
      ASSERT_TRUE(shards_[0]->Wait(10s).has_value());
    }
    for (const auto& entry : fs::directory_iterator(dir_ + "/ckpt/shard-0")) {
      if (!fs::exists(entry.path() / "MANIFEST.json")) killed_mid_write = true;
    }
    endpoint = StartShard(0, 1);
    replay::ReplaySampler sampler = Sampler({endpoint});
    EXPECT_EQ(sampler.Totals()[0].size, 200000) << shards_[0]->Log();
    EXPECT_EQ(sampler.Sample(256).size(), 256);
  }
  // The point of the test: at least one kill landed inside a write.
  EXPECT_TRUE(killed_mid_write);
}

TEST_F(ReplayProcessTest, FullDiskFailsTheCheckpointKeepsTheLastGoodOneAndTheShardServing) {
  const std::string small_disk = dir_ + "/small_disk";
  fs::create_directories(small_disk);
  if (::mount("tmpfs", small_disk.c_str(), "tmpfs", 0, "size=512k") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs (needs root): " << std::strerror(errno);
  }
  std::string endpoint = StartShard(0, 1, small_disk);
  auto few = LoadClient({endpoint}, 1, 1000, 0);  // ~60 KB: fits
  ASSERT_EQ(few->Wait(30s), 0) << few->Log();
  replay::ReplaySampler sampler = Sampler({endpoint});
  EXPECT_EQ(Json::parse(sampler.Checkpoint(0))["items"], 1000);
  auto many = LoadClient({endpoint}, 2, 20000, 0);  // ~1.2 MB: does not
  ASSERT_EQ(many->Wait(30s), 0) << many->Log();
  EXPECT_THROW(sampler.Checkpoint(0), ResourceExhausted);
  EXPECT_EQ(sampler.Sample(128).size(), 128);  // still serving
  const Json info = Json::parse(sampler.Info(0));
  EXPECT_EQ(info["checkpoints"]["failed"], 1);
  // Killed now, the shard comes back with the last good checkpoint.
  shards_[0]->Signal(SIGKILL);
  shards_[0]->Wait(10s);
  endpoint = StartShard(0, 1, small_disk);
  replay::ReplaySampler restarted = Sampler({endpoint});
  EXPECT_EQ(restarted.Totals()[0].size, 1000);
  shards_.clear();
  ::umount(small_disk.c_str());
}

}  // namespace
}  // namespace rlswarm
