// TD3's actors (td3_acting_policy.h) in the shared actor loop, against a
// real replay shard over tcp loopback, with weights from a real broadcast
// publisher: float actions within the bounds with the configured noise,
// initial priorities from the actor's copy of the critics.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "actors/acting_policy.h"
#include "actors/actor.h"
#include "models/continuous_networks.h"
#include "models/weights_wire.h"
#include "replay/service/replay_service.h"
#include "replay/service/transition.h"
#include "replay/test_util.h"
#include "rpc/broadcast.h"

namespace rlswarm::actors {
namespace {

using namespace std::chrono_literals;

const replay::Signature kPendulum =
    replay::TransitionSignature(DType::kFloat32, {3}, DType::kFloat32, {1});

std::unique_ptr<replay::ReplayService> StartShard() {
  replay::ReplayServiceOptions o;
  o.table.signature = kPendulum;
  o.table.capacity = 100000;
  o.table.selector.kind = replay::SelectorKind::kPrioritized;
  o.table.rate_limiter = replay::RateLimiterOptions::MinSize(1);
  o.server.endpoint = "tcp://127.0.0.1:*";
  auto shard = std::make_unique<replay::ReplayService>(o);
  shard->Start();
  return shard;
}

ActingNetworks PendulumNetworks() {
  const std::vector<std::int64_t> hidden = {16, 16};
  return {
      models::MakeDeterministicPolicySpec({.observation_dim = 3,
                                           .action_dim = 1,
                                           .hidden_sizes = hidden,
                                           .action_low = {-2.0f},
                                           .action_high = {2.0f}}),
      models::MakeTwinCriticSpec({.observation_dim = 3, .action_dim = 1, .hidden_sizes = hidden}),
      7};
}

ActorOptions PendulumActor(std::int64_t max_steps, double sigma) {
  ActorOptions o;
  o.env_name = "Pendulum-v1";
  o.env.num_envs = 4;
  o.n_step = {3, 0.9};
  o.exploration.schedule = EpsilonSchedule::kFixed;
  o.exploration.epsilon = sigma;
  o.max_steps = max_steps;
  o.refresh_steps = 1;
  o.refresh_interval = 0ms;
  return o;
}

replay::ReplayWriterOptions Writer(const std::string& endpoint) {
  replay::ReplayWriterOptions o;
  o.endpoints = {endpoint};
  o.signature = kPendulum;
  o.max_batch_items = 64;
  o.flush_interval = 5ms;
  o.max_block = 1s;
  o.insert_timeout = 500ms;
  o.retry_backoff = 20ms;
  return o;
}

// The weights a TD3 learner publishes, "policy." and "critic." names, set so
// that mu(s) = 0 for every s and both critics are the constant `q`.
std::vector<Payload> ZeroPolicyConstantCritic(const ActingNetworks& n, float q) {
  models::NamedTensors named;
  for (auto [name, t] : models::InitNamedParameters(n.policy, 0)) {
    named.emplace_back(models::kPolicyWeightsPrefix + name, at::zeros_like(t).to(at::kFloat));
  }
  for (auto [name, t] : models::InitNamedParameters(*n.critic, 0)) {
    at::Tensor value = at::zeros_like(t).to(at::kFloat);
    if (name == "q.bias") value.fill_(q);
    named.emplace_back(models::kCriticWeightsPrefix + name, value);
  }
  return models::EncodeWeights(named);
}

TEST(Td3ActorTest, ExploresAroundThePolicyWithinTheBoundsAndPrioritisesByItsCritics) {
  auto shard = StartShard();
  rpc::Publisher publisher(rpc::PublisherOptions{});
  const ActingNetworks networks = PendulumNetworks();
  constexpr float kQ = -3.0f;
  publisher.Publish(1, ZeroPolicyConstantCritic(networks, kQ));
  ActorOptions options = PendulumActor(4000, /*sigma=*/0.25);
  options.weights = {{publisher.endpoint(), publisher.snapshot_endpoint()}};
  Actor actor(options, networks, Writer(shard->endpoint()));
  actor.Run();  // the steps before version 1 arrived are left out below
  const ActorStats stats = actor.stats();
  ASSERT_EQ(stats.policy_version, 1);
  EXPECT_EQ(stats.env_steps, 4000);
  EXPECT_EQ(stats.episodes, 4000 / 200);  // Pendulum truncates every 200 steps
  EXPECT_EQ(stats.writer.items_dropped, 0);
  EXPECT_EQ(shard->table().Info().size, stats.writer.items_acknowledged);

  const replay::SampledBatch batch = shard->table().Sample({2000});
  double sum = 0, sum_sq = 0;
  int counted = 0;
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    if (batch.policy_versions[i] != 1) continue;
    ++counted;
    const float action = replay::testing::FieldAt<float>(batch.fields[1], i);
    ASSERT_GE(action, -2.0f);
    ASSERT_LE(action, 2.0f);
    sum += action;
    sum_sq += static_cast<double>(action) * action;
    // Q1(s, a) = V(s') = kQ: the priority is |R + discount kQ - kQ|.
    const float reward = replay::testing::FieldAt<float>(batch.fields[2], i);
    const float discount = replay::testing::FieldAt<float>(batch.fields[3], i);
    EXPECT_GT(discount, 0.0f);  // Pendulum never terminates: every step bootstraps
    EXPECT_NEAR(batch.priorities[i], std::abs(reward + discount * kQ - kQ), 1e-3);
  }
  ASSERT_GT(counted, 1000);
  // mu = 0 plus N(0, (0.25 * half-range 2)^2): mean 0, std 0.5.
  const double mean = sum / counted;
  const double std = std::sqrt(sum_sq / counted - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.08);
  EXPECT_NEAR(std, 0.5, 0.08);
}

TEST(Td3ActorTest, ContinuousActionsNeedTheCriticsAndDiscreteEnvsRefuseTd3) {
  auto shard = StartShard();
  ActingNetworks no_critic = PendulumNetworks();
  no_critic.critic.reset();
  EXPECT_THROW(Actor(PendulumActor(10, 0.1), no_critic, Writer(shard->endpoint())),
               InvalidArgument);
  ActorOptions cartpole = PendulumActor(10, 0.1);
  cartpole.env_name = "CartPole-v1";
  EXPECT_THROW(Actor(cartpole, PendulumNetworks(), Writer(shard->endpoint())), InvalidArgument);
}

TEST(Td3ActorTest, AGreedyEvaluationPolicyActsWithThePolicyAlone) {
  ActingNetworks policy_only = PendulumNetworks();
  policy_only.critic.reset();
  const envs::EnvSpec spec = envs::MakeEnv("Pendulum-v1")->spec();
  std::unique_ptr<ActingPolicy> acting = MakeActingPolicy(policy_only, spec);
  // A checkpoint's policy: its own names, no prefix; a constant action of
  // mid + half * tanh(bias) = 2 tanh(0.5).
  models::NamedTensors named;
  for (auto [name, t] : models::InitNamedParameters(policy_only.policy, 0)) {
    at::Tensor value = at::zeros_like(t).to(at::kFloat);
    if (name == "action.bias") value.fill_(0.5f);
    named.emplace_back(name, value);
  }
  acting->LoadWeights(models::EncodeWeights(named));
  envs::VectorEnv env("Pendulum-v1", {.num_envs = 2});
  env.Reset(1);
  std::unique_ptr<envs::BatchPolicy> greedy = acting->MakeEvaluationPolicy(2, 0.0, 3);
  greedy->OnEpisodeStart(0, 0);
  greedy->OnEpisodeStart(1, 1);
  std::vector<float> actions(2);
  greedy->Act(env, {}, actions);
  for (float a : actions) EXPECT_NEAR(a, 2 * std::tanh(0.5), 1e-5);
  // A blob that fits neither network is refused.
  EXPECT_THROW(
      acting->LoadWeights(models::EncodeWeights({{"policy.fc0.weight", at::zeros({2, 2})}})),
      InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::actors
