// `rlswarm learner` as users run it: a child process training from a
// `rlswarm replay` child process, publishing weights to a subscriber in this
// process, stopping on SIGTERM with a final checkpoint, and resuming from it.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "replay/service/replay_writer.h"
#include "replay/service/transition.h"
#include "rpc/broadcast.h"

namespace rlswarm {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;

class LearnerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  std::string Config() const { return std::string(RLSWARM_CONFIGS_DIR) + "/cartpole.yaml"; }

  // 1000 CartPole-shaped transitions (the values do not matter here).
  void Fill(const std::string& endpoint) {
    replay::ReplayWriterOptions o;
    o.endpoints = {endpoint};
    o.signature = replay::TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {});
    replay::ReplayWriter writer(o);
    constexpr int64_t kN = 1000;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0, 0.1f);
    std::vector<float> obs(4 * kN), next(4 * kN), reward(kN, 1.0f), discount(kN, 0.99f);
    std::vector<int64_t> action(kN);
    for (auto& x : obs) x = normal(rng);
    for (auto& x : next) x = normal(rng);
    for (int64_t i = 0; i < kN; ++i) action[i] = i % 2;
    const std::vector<int64_t> n = {kN}, n4 = {kN, 4};
    replay::InsertBatch batch;
    batch.fields = {
        {replay::transition::kObservation, DType::kFloat32, n4, std::as_bytes(std::span(obs))},
        {replay::transition::kAction, DType::kInt64, n, std::as_bytes(std::span(action))},
        {replay::transition::kReward, DType::kFloat32, n, std::as_bytes(std::span(reward))},
        {replay::transition::kDiscount, DType::kFloat32, n, std::as_bytes(std::span(discount))},
        {replay::transition::kNextObservation, DType::kFloat32, n4,
         std::as_bytes(std::span(next))}};
    writer.Append(batch);
    ASSERT_TRUE(writer.Flush(20s));
    ASSERT_EQ(writer.stats().items_acknowledged, kN);
  }

  // The update count in the newest complete checkpoint's manifest; -1 if none.
  int64_t NewestCheckpointUpdate() const {
    int64_t newest = -1;
    for (const auto& e : fs::directory_iterator(dir_ + "/ckpt")) {
      std::ifstream in(e.path() / "manifest.json");
      if (!in) continue;
      newest = std::max(newest, nlohmann::json::parse(in).at("update_count").get<int64_t>());
    }
    return newest;
  }

  testing::TempDir temp_{"learner_process"};
  const std::string dir_ = temp_.path();
};

TEST_F(LearnerProcessTest, TrainsPublishesCheckpointsOnSigtermAndResumes) {
  const std::string replay_file = dir_ + "/replay.endpoint";
  ChildProcess replay(
      {RLSWARM_BINARY, "replay", "--config", Config(), "--shard", "0", "--bind",
       "tcp://127.0.0.1:*", "--endpoint-file", replay_file, "replay.min_size_to_sample=100"},
      dir_ + "/replay.log");
  const std::string endpoint = testing::WaitForFileLine(replay_file, 20s);
  ASSERT_FALSE(endpoint.empty()) << replay.Log();
  Fill(endpoint);
  const std::string port = endpoint.substr(endpoint.rfind(':') + 1);

  const std::string weights_file = dir_ + "/weights.endpoints";
  ChildProcess learner({RLSWARM_BINARY, "learner", "--config", Config(), "--weights-endpoint-file",
                        weights_file, "replay.host=127.0.0.1", "replay.base_port=" + port,
                        "learner.checkpoint_dir=" + dir_ + "/ckpt", "learner.publish_interval=10",
                        "learner.log_interval_s=1"},
                       dir_ + "/learner.log");
  ASSERT_FALSE(testing::WaitForFileLine(weights_file, 30s).empty()) << learner.Log();
  rpc::SubscriberOptions so;
  {
    std::ifstream in(weights_file);
    std::getline(in, so.endpoint);
    std::getline(in, so.snapshot_endpoint);
  }
  rpc::Subscriber subscriber(so);
  std::optional<rpc::VersionedBlob> blob = subscriber.WaitNewer(299, 60s);
  ASSERT_TRUE(blob.has_value()) << learner.Log();
  EXPECT_EQ(blob->version % 10, 0u);  // version = update count, every 10 updates

  learner.Signal(SIGTERM);
  ASSERT_EQ(learner.Wait(30s), 0) << learner.Log();
  const int64_t saved_update = NewestCheckpointUpdate();
  EXPECT_GE(saved_update, 300) << learner.Log();

  // A restart resumes from that checkpoint: 50 more updates, then stops at
  // max_updates with a checkpoint of its own.
  ChildProcess resumed({RLSWARM_BINARY, "learner", "--config", Config(), "replay.host=127.0.0.1",
                        "replay.base_port=" + port, "learner.checkpoint_dir=" + dir_ + "/ckpt",
                        "learner.max_updates=" + std::to_string(saved_update + 50)},
                       dir_ + "/resumed.log");
  ASSERT_EQ(resumed.Wait(60s), 0) << resumed.Log();
  EXPECT_NE(resumed.Log().find("resumed from"), std::string::npos) << resumed.Log();
  EXPECT_EQ(NewestCheckpointUpdate(), saved_update + 50) << resumed.Log();

  // Evaluation loads what the learner wrote: the Q-network plays greedily,
  // and --record draws its first episode.
  ChildProcess evaluate({RLSWARM_BINARY, "evaluate", "--config", Config(), "--checkpoint",
                         dir_ + "/ckpt", "--episodes", "4", "--json", "--record", dir_ + "/frames"},
                        dir_ + "/evaluate.log");
  ASSERT_EQ(evaluate.Wait(60s), 0) << evaluate.Log();
  const std::string log = evaluate.Log();
  const auto report = nlohmann::json::parse(log.substr(log.rfind("{\"")));
  EXPECT_EQ(report["policy"], "q");
  EXPECT_EQ(report["episodes"], 4);
  EXPECT_GT(report["mean_return"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/frames/episode-0000/frame-00000.png"));
  replay.Signal(SIGTERM);
  EXPECT_EQ(replay.Wait(20s), 0) << replay.Log();
}

}  // namespace
}  // namespace rlswarm
