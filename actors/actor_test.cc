// The actor loop against a real replay shard over tcp loopback, with weights
// from a real broadcast publisher.

#include "actors/actor.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "actors/q_policy.h"
#include "models/q_networks.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"
#include "replay/service/replay_service.h"
#include "replay/service/transition.h"
#include "replay/test_util.h"
#include "rpc/broadcast.h"

namespace rlswarm::actors {
namespace {

using namespace std::chrono_literals;

const replay::Signature kCartPole =
    replay::TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {});

std::unique_ptr<replay::ReplayService> StartShard(
    const std::string& endpoint = "tcp://127.0.0.1:*") {
  replay::ReplayServiceOptions o;
  o.table.signature = kCartPole;
  o.table.capacity = 100000;
  o.table.selector.kind = replay::SelectorKind::kPrioritized;
  o.table.rate_limiter = replay::RateLimiterOptions::MinSize(1);
  o.server.endpoint = endpoint;
  auto shard = std::make_unique<replay::ReplayService>(o);
  shard->Start();
  return shard;
}

ActorOptions CartPoleActor(std::int64_t max_steps) {
  ActorOptions o;
  o.env_name = "CartPole-v1";
  o.env.num_envs = 8;
  o.n_step = {3, 0.9};
  o.exploration.schedule = EpsilonSchedule::kFixed;
  o.exploration.epsilon = 0.3;
  o.max_steps = max_steps;
  o.refresh_steps = 1;
  o.refresh_interval = 0ms;
  return o;
}

replay::ReplayWriterOptions Writer(const std::string& endpoint) {
  replay::ReplayWriterOptions o;
  o.endpoints = {endpoint};
  o.signature = kCartPole;
  o.max_batch_items = 64;
  o.flush_interval = 5ms;
  o.max_block = 5ms;
  o.insert_timeout = 500ms;
  o.retry_backoff = 20ms;
  return o;
}

const models::ModelSpec kMlp = models::MakeMlpSpec(models::MlpOptions{});

rpc::SubscriberOptions Follow(const rpc::Publisher& publisher) {
  rpc::SubscriberOptions o;
  o.endpoint = publisher.endpoint();
  o.snapshot_endpoint = publisher.snapshot_endpoint();
  return o;
}

// Weights under which the greedy action is always `action`: every
// parameter 0 except the head's bias.
std::vector<Payload> AlwaysAction(int action) {
  models::NamedTensors named = models::InitNamedParameters(kMlp, 0);
  for (auto& [name, t] : named) {
    t = at::zeros_like(t).to(at::kFloat);
    if (name == "head.bias") t[action] = 5.0;
  }
  return models::EncodeWeights(named);
}

// What the actor stored: every transition acted on version 1 took
// `action_v1`, on version 2 `action_v2` (greedy weights that always pick one
// action), and both versions acted; version 0 acted before any arrived.
void ExpectActionsOfVersions(replay::ReplayService& shard, std::int64_t action_v1,
                             std::int64_t action_v2) {
  const replay::SampledBatch batch = shard.table().Sample({2000});
  int seen[3] = {0, 0, 0};
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    const std::int64_t version = batch.policy_versions[i];
    ASSERT_TRUE(version >= 0 && version <= 2) << version;
    ++seen[version];
    if (version == 0) continue;
    EXPECT_EQ(replay::testing::FieldAt<std::int64_t>(batch.fields[1], i),
              version == 1 ? action_v1 : action_v2);
  }
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
}

TEST(ActorTest, DeliversNStepTransitionsWithTheRightContents) {
  auto shard = StartShard();
  Actor actor(CartPoleActor(4000), kMlp, 1, Writer(shard->endpoint()));
  actor.Run();
  const ActorStats stats = actor.stats();
  EXPECT_EQ(stats.env_steps, 4000);
  EXPECT_GT(stats.episodes, 10);
  EXPECT_EQ(stats.writer.items_dropped, 0);
  const std::int64_t stored = shard->table().Info().size;
  EXPECT_EQ(stored, stats.writer.items_acknowledged);
  EXPECT_GT(stored, 3900);  // all but the last n-1 steps of each env
  const replay::SampledBatch batch = shard->table().Sample({512});
  for (std::size_t i = 0; i < 512; ++i) {
    // CartPole pays 1 per step: R = (1 - 0.9^m) / 0.1 for m in 1..3 steps,
    // discount 0.9^m, or 0 when the pole fell within them.
    const float reward = replay::testing::FieldAt<float>(batch.fields[2], i);
    const float discount = replay::testing::FieldAt<float>(batch.fields[3], i);
    const auto action = replay::testing::FieldAt<std::int64_t>(batch.fields[1], i);
    EXPECT_TRUE(action == 0 || action == 1);
    if (discount > 0) {
      const int m = static_cast<int>(std::lround(std::log(discount) / std::log(0.9)));
      // No episode reaches CartPole's time limit (500 steps) in 500 steps of
      // a random-ish policy, so every non-terminal transition is n long.
      EXPECT_EQ(m, 3);
      EXPECT_NEAR(reward, (1 - std::pow(0.9, m)) / 0.1, 1e-5);
    } else {
      bool matches = false;
      for (int m = 1; m <= 3; ++m)
        matches |= std::abs(reward - (1 - std::pow(0.9, m)) / 0.1) < 1e-5;
      EXPECT_TRUE(matches) << reward;
    }
    EXPECT_GT(batch.priorities[i], 0.0);
    EXPECT_EQ(batch.policy_versions[i], 0);
  }
}

// --resume: an actor told how many env steps it took before goes on with its
// exploration schedule from there (here past the anneal: the end epsilon)
// instead of starting again at 1.
TEST(ActorTest, AResumedActorContinuesItsExplorationSchedule) {
  auto shard = StartShard();
  ActorOptions options = CartPoleActor(/*max_steps=*/8);  // one step of its 8 envs
  options.exploration.schedule = EpsilonSchedule::kLinear;
  options.exploration.start = 1.0;
  options.exploration.end = 0.1;
  options.exploration.anneal_steps = 1000;
  Actor fresh(options, kMlp, 1, Writer(shard->endpoint()));
  fresh.Run();
  EXPECT_DOUBLE_EQ(fresh.epsilon(), 1.0);
  options.start_steps = 500;
  Actor halfway(options, kMlp, 1, Writer(shard->endpoint()));
  halfway.Run();
  EXPECT_NEAR(halfway.epsilon(), 0.55, 1e-9);
  options.start_steps = 5000;
  Actor resumed(options, kMlp, 1, Writer(shard->endpoint()));
  resumed.Run();
  EXPECT_DOUBLE_EQ(resumed.epsilon(), 0.1);
  EXPECT_EQ(resumed.stats().env_steps, 8);  // max_steps counts this run's steps
  options.start_steps = -1;
  EXPECT_THROW(options.Validate(), InvalidArgument);
}

TEST(ActorTest, NewWeightsPublishedMidRunChangeTheActions) {
  auto shard = StartShard();
  rpc::Publisher publisher(rpc::PublisherOptions{});
  ActorOptions options = CartPoleActor(0);
  options.exploration.epsilon = 0.0;  // greedy: actions show the weights
  options.weights = {Follow(publisher)};
  publisher.Publish(1, AlwaysAction(0));
  Actor actor(options, kMlp, 1, Writer(shard->endpoint()));
  std::thread run([&] { actor.Run(); });
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().policy_version == 1; }, 10s));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().env_steps > 2000; }, 10s));
  publisher.Publish(2, AlwaysAction(1));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().policy_version == 2; }, 10s));
  const std::int64_t switched_at = actor.stats().env_steps;
  ASSERT_TRUE(
      replay::testing::WaitFor([&] { return actor.stats().env_steps > switched_at + 2000; }, 10s));
  actor.Stop();
  run.join();
  ExpectActionsOfVersions(*shard, 0, 1);
}

// As a learner with two ranks publishes in publish_mode parts: rank r
// holds elements [r * n / 2, (r + 1) * n / 2) of every parameter.
std::vector<Payload> AlwaysActionPart(int action, int rank) {
  const models::WeightsPart whole = models::DecodeWeights(AlwaysAction(action));
  models::NamedTensors part;
  int index = 0;
  for (const auto& [name, t] : whole.tensors) {
    const std::int64_t begin = t.numel() * rank / 2;
    const std::int64_t end = t.numel() * (rank + 1) / 2;
    if (begin < end) {
      part.emplace_back(models::WeightsPartName(name, index, t.sizes().vec(), begin),
                        t.reshape(-1).narrow(0, begin, end - begin).clone());
    }
    ++index;
  }
  return models::EncodeWeights(part, rank, 2);
}

TEST(ActorTest, FollowsWeightsPublishedInPartsByEveryLearnerRank) {
  auto shard = StartShard();
  rpc::Publisher rank0(rpc::PublisherOptions{});
  rpc::Publisher rank1(rpc::PublisherOptions{});
  ActorOptions options = CartPoleActor(0);
  options.exploration.epsilon = 0.0;
  options.weights = {Follow(rank0), Follow(rank1)};
  rank0.Publish(1, AlwaysActionPart(1, 0));
  rank1.Publish(1, AlwaysActionPart(1, 1));
  Actor actor(options, kMlp, 1, Writer(shard->endpoint()));
  std::thread run([&] { actor.Run(); });
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().policy_version == 1; }, 10s));
  // Rank 0 alone moves on: the actor must not load half of version 2.
  rank0.Publish(2, AlwaysActionPart(0, 0));
  ASSERT_TRUE(
      replay::testing::WaitFor([&] { return actor.stats().newest_version_seen == 2; }, 10s));
  const std::int64_t steps = actor.stats().env_steps;
  ASSERT_TRUE(
      replay::testing::WaitFor([&] { return actor.stats().env_steps > steps + 2000; }, 10s));
  EXPECT_EQ(actor.stats().policy_version, 1);
  rank1.Publish(2, AlwaysActionPart(0, 1));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().policy_version == 2; }, 10s));
  const std::int64_t switched_at = actor.stats().env_steps;
  ASSERT_TRUE(
      replay::testing::WaitFor([&] { return actor.stats().env_steps > switched_at + 2000; }, 10s));
  actor.Stop();
  run.join();
  ExpectActionsOfVersions(*shard, 1, 0);
}

TEST(ActorTest, SurvivesReplayKilledAndRestartedAndResumesSending) {
  auto shard = StartShard();
  const std::string endpoint = shard->endpoint();
  ActorOptions options = CartPoleActor(0);
  Actor actor(options, kMlp, 1, Writer(endpoint));
  std::thread run([&] { actor.Run(); });
  ASSERT_TRUE(replay::testing::WaitFor([&] { return shard->table().Info().size > 500; }, 10s));
  shard->Stop();
  shard.reset();
  const std::int64_t steps_when_killed = actor.stats().env_steps;
  ASSERT_TRUE(replay::testing::WaitFor(
      [&] { return actor.stats().env_steps > steps_when_killed + 5000; }, 20s))
      << "the actor stopped acting while replay was down";
  shard = StartShard(endpoint);  // same address, fresh (no checkpoint)
  ASSERT_TRUE(replay::testing::WaitFor([&] { return shard->table().Info().size > 500; }, 20s))
      << "the actor did not resume sending";
  actor.Stop();
  run.join();
  const ActorStats stats = actor.stats();
  EXPECT_GT(stats.writer.items_dropped, 0);  // the buffer bound was hit, and counted
  EXPECT_LE(stats.writer.buffered, 64);
}

// Replay's rate limiter holds every insert past the first few (nothing
// samples), so the writer's buffer fills and the actor's next send waits for
// room, up to max_block. Stop() ends that wait: Run() returns after its
// final flush (5 s at most), not after max_block.
TEST(ActorTest, StopWakesASendWaitingForRoomBehindTheRateLimiter) {
  replay::ReplayServiceOptions o;
  o.table.signature = kCartPole;
  o.table.capacity = 100000;
  o.table.rate_limiter = replay::RateLimiterOptions::SampleToInsertRatio(1.0, 1, 10.0);
  o.server.endpoint = "tcp://127.0.0.1:*";
  replay::ReplayService shard(o);
  shard.Start();
  replay::ReplayWriterOptions writer = Writer(shard.endpoint());
  writer.max_in_flight = 1;
  writer.max_buffered_batches = 2;
  writer.max_block = 60s;
  Actor actor(CartPoleActor(0), kMlp, 1, writer);
  std::atomic<bool> returned{false};
  std::thread run([&] {
    actor.Run();
    returned = true;
  });
  ASSERT_TRUE(replay::testing::WaitFor([&] { return actor.stats().writer.buffered >= 2; }, 20s))
      << "the writer's buffer never filled";
  const auto stopped_at = std::chrono::steady_clock::now();
  actor.Stop();
  const bool returned_in_time = replay::testing::WaitFor([&] { return returned.load(); }, 20s);
  run.join();  // after max_block at the latest
  EXPECT_TRUE(returned_in_time)
      << "Run() returned only after "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count()
      << " s";
  shard.Stop();
}

}  // namespace
}  // namespace rlswarm::actors
