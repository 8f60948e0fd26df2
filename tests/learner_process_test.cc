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
#include <span>
#include <string>
#include <vector>

#include "common/testing/child_process.h"
#include "common/testing/files.h"
#include "envs/vector_env.h"
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

  // 1000 CartPole-v1 transitions of a seeded random policy: discount 0 where
  // the pole fell, the final observation where an episode was cut short.
  // Real ones, so that what the learner makes of them can be judged.
  void Fill(const std::string& endpoint) {
    replay::ReplayWriterOptions o;
    o.endpoints = {endpoint};
    o.signature = replay::TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {});
    replay::ReplayWriter writer(o);
    constexpr int64_t kN = 1000;
    envs::VectorEnvOptions eo;
    eo.num_envs = 8;
    envs::VectorEnv env("CartPole-v1", eo);
    env.Reset(1);
    std::mt19937 rng(1);
    std::vector<float> obs, next, reward, discount;
    std::vector<int64_t> action;
    std::vector<int64_t> actions(static_cast<size_t>(eo.num_envs));
    while (static_cast<int64_t>(action.size()) < kN) {
      const auto* before = reinterpret_cast<const float*>(env.observations());
      std::vector<float> current(before, before + 4 * eo.num_envs);
      for (auto& a : actions) a = static_cast<int64_t>(rng() % 2);
      env.Step(std::span<const int64_t>(actions));
      for (int64_t i = 0; i < eo.num_envs && static_cast<int64_t>(action.size()) < kN; ++i) {
        const auto row = env.done(i) ? env.final_observation(i) : env.observation(i);
        const auto* after = reinterpret_cast<const float*>(row.data());
        obs.insert(obs.end(), current.begin() + 4 * i, current.begin() + 4 * i + 4);
        next.insert(next.end(), after, after + 4);
        action.push_back(actions[static_cast<size_t>(i)]);
        reward.push_back(env.rewards()[i]);
        discount.push_back(env.terminated()[i] ? 0.0f : 0.99f);
      }
    }
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
  ChildProcess evaluate(
      {RLSWARM_BINARY, "evaluate", "--config", Config(), "--checkpoint", dir_ + "/ckpt",
       "--episodes", "100", "--json", "--record", dir_ + "/frames"},
      dir_ + "/evaluate.log");
  ASSERT_EQ(evaluate.Wait(60s), 0) << evaluate.Log();
  const std::string log = evaluate.Log();
  const auto report = nlohmann::json::parse(log.substr(log.rfind("{\"")));
  EXPECT_EQ(report["policy"], "q");
  EXPECT_EQ(report["episodes"], 100);
  // Trained on a random policy's transitions, the greedy policy balances far
  // longer than a random one (~22): 81.01 in six runs here, also with both
  // cores busy (the draws are seeded per update, so the run repeats).
  EXPECT_GT(report["mean_return"].get<double>(), 40) << log;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/frames/episode-0000/frame-00000.png"));
  replay.Signal(SIGTERM);
  EXPECT_EQ(replay.Wait(20s), 0) << replay.Log();
}

}  // namespace
}  // namespace rlswarm
