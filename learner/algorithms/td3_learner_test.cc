// The Ape-X learner with TD3 behind the seam (td3_algorithm.h), world 1,
// on a real replay shard of Pendulum transitions: what it publishes and how
// its checkpoints of two networks resume.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "common/testing/files.h"
#include "envs/registry.h"
#include "learner/algorithms/td3_algorithm.h"
#include "learner/apex/apex_learner.h"
#include "learner/testing/harness.h"
#include "models/continuous_networks.h"
#include "models/weights_wire.h"
#include "replay/service/replay_service.h"
#include "replay/service/transition.h"
#include "rpc/broadcast.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A shard holding `n` 1-step Pendulum transitions of uniform random torques.
std::unique_ptr<replay::ReplayService> PendulumReplay(int n) {
  replay::ReplayServiceOptions o;
  o.table.signature = replay::TransitionSignature(DType::kFloat32, {3}, DType::kFloat32, {1});
  o.table.capacity = n;
  o.table.selector.kind = replay::SelectorKind::kPrioritized;
  o.server.endpoint = "tcp://127.0.0.1:*";
  auto shard = std::make_unique<replay::ReplayService>(std::move(o));
  shard->Start();
  std::unique_ptr<envs::Env> env = envs::MakeEnv("Pendulum-v1");
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> torque(-2, 2);
  std::vector<float> obs(3 * n), next(3 * n), action(n), reward(n), discount(n, 0.99f);
  std::vector<float> current(3);
  auto bytes = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
  env->Reset(1, bytes(current));
  for (int i = 0; i < n; ++i) {
    std::copy(current.begin(), current.end(), obs.begin() + 3 * i);
    action[i] = torque(rng);
    const envs::StepResult r = env->Step(std::span<const float>(&action[i], 1), bytes(current));
    std::copy(current.begin(), current.end(), next.begin() + 3 * i);
    reward[i] = r.reward;
    if (r.truncated) env->Reset(std::nullopt, bytes(current));
  }
  namespace field = replay::transition;
  const std::vector<int64_t> rows = {n}, obs_shape = {n, 3}, action_shape = {n, 1};
  replay::InsertBatch batch;
  batch.fields = {
      {field::kObservation, DType::kFloat32, obs_shape, std::as_bytes(std::span(obs))},
      {field::kAction, DType::kFloat32, action_shape, std::as_bytes(std::span(action))},
      {field::kReward, DType::kFloat32, rows, std::as_bytes(std::span(reward))},
      {field::kDiscount, DType::kFloat32, rows, std::as_bytes(std::span(discount))},
      {field::kNextObservation, DType::kFloat32, obs_shape, std::as_bytes(std::span(next))}};
  shard->table().Insert(batch);
  return shard;
}

std::unique_ptr<ApeXLearner> Td3Learner(const std::string& endpoint, const std::string& ckpt) {
  ApeXOptions o;
  o.batch_size = 32;
  o.sampler.endpoints = {endpoint};
  o.sampler.seed = 5;
  o.log_interval = 0ms;
  o.publish_interval = 5;
  o.checkpoint_dir = ckpt;
  Td3Options td3;
  td3.actor.seed = 1;
  td3.critic.seed = 2;
  td3.target_tau = 0.05;
  const std::vector<int64_t> hidden = {16, 16};
  const models::ModelSpec policy = models::MakeDeterministicPolicySpec({.observation_dim = 3,
                                                                        .action_dim = 1,
                                                                        .hidden_sizes = hidden,
                                                                        .action_low = {-2.0f},
                                                                        .action_high = {2.0f}});
  const models::ModelSpec critic =
      models::MakeTwinCriticSpec({.observation_dim = 3, .action_dim = 1, .hidden_sizes = hidden});
  const ActionBounds bounds{at::full({1}, -2.0), at::full({1}, 2.0)};
  return std::make_unique<ApeXLearner>(
      [&](const ShardMesh& mesh) {
        return std::make_unique<Td3Algorithm>(policy, critic, bounds, td3, mesh);
      },
      o, ShardMesh::OneDim(std::make_shared<Communicator>()));
}

Td3Trainer& TrainerOf(ApeXLearner& learner) {
  return static_cast<Td3Algorithm&>(learner.algorithm()).trainer();
}

void Train(ApeXLearner& learner, int updates) {
  const int64_t until = learner.updates() + updates;
  while (learner.updates() < until) learner.Update();
}

TEST(Td3LearnerTest, PublishesThePolicyAndTheCriticsInOneBlob) {
  at::set_num_threads(1);
  auto replay = PendulumReplay(600);
  std::unique_ptr<ApeXLearner> learner = Td3Learner(replay->endpoint(), "");
  rpc::Subscriber subscriber(
      {learner->broadcaster().endpoint(), learner->broadcaster().snapshot_endpoint()});
  Train(*learner, 10);
  std::optional<rpc::VersionedBlob> blob = subscriber.WaitNewer(9, 10s);
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(blob->version, 10u);
  const models::WeightsPart part = models::DecodeWeights(blob->payloads);
  models::NamedTensors expected;
  for (auto& [name, t] : TrainerOf(*learner).actor().FullParameters()) {
    expected.emplace_back(models::kPolicyWeightsPrefix + name, t);
  }
  for (auto& [name, t] : TrainerOf(*learner).critic().FullParameters()) {
    expected.emplace_back(models::kCriticWeightsPrefix + name, t);
  }
  ASSERT_EQ(part.tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(part.tensors[i].first, expected[i].first);
    EXPECT_TRUE(at::equal(part.tensors[i].second, expected[i].second)) << expected[i].first;
  }
}

std::vector<double> Flat(ShardedModel& model) { return testing::Flatten(model.FullParameters()); }

TEST(Td3LearnerTest, ResumesTheNewestUpdateCompleteForBothNetworks) {
  at::set_num_threads(1);
  auto replay = PendulumReplay(600);
  rlswarm::testing::TempDir dir("td3_resume");
  const std::string ckpt = dir.path() + "/ckpt";
  std::vector<double> actor_10, critic_target_10, actor_15;
  {
    std::unique_ptr<ApeXLearner> learner = Td3Learner(replay->endpoint(), ckpt);
    Train(*learner, 10);
    learner->SaveCheckpoint();
    actor_10 = Flat(TrainerOf(*learner).actor());
    critic_target_10 = Flat(TrainerOf(*learner).critic_target());
    Train(*learner, 5);
    EXPECT_EQ(learner->SaveCheckpoint(), ckpt + "/critic/update-000000000015");
    actor_15 = Flat(TrainerOf(*learner).actor());
  }
  ASSERT_NE(actor_10, actor_15);
  ASSERT_TRUE(fs::is_directory(ckpt + "/actor/update-000000000015"));
  {
    std::unique_ptr<ApeXLearner> resumed = Td3Learner(replay->endpoint(), ckpt);
    ASSERT_EQ(resumed->Resume(), ckpt + "/critic/update-000000000015");
    EXPECT_EQ(resumed->updates(), 15);
    EXPECT_EQ(Flat(TrainerOf(*resumed).actor()), actor_15);
  }
  // The policy of update 15 lost (a crash between the two roots' writes, or
  // a damaged file): the newest update complete for both is 10.
  fs::remove_all(ckpt + "/actor/update-000000000015");
  std::unique_ptr<ApeXLearner> resumed = Td3Learner(replay->endpoint(), ckpt);
  ASSERT_EQ(resumed->Resume(), ckpt + "/critic/update-000000000010");
  EXPECT_EQ(resumed->updates(), 10);
  EXPECT_EQ(Flat(TrainerOf(*resumed).actor()), actor_10);
  EXPECT_EQ(Flat(TrainerOf(*resumed).critic_target()), critic_target_10);
  Train(*resumed, 1);  // and it trains on from there
  EXPECT_EQ(resumed->updates(), 11);
}

}  // namespace
}  // namespace rlswarm::learner
