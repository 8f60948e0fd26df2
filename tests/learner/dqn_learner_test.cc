#include "learner/algorithms/dqn_learner.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "common/errors.h"
#include "learner/testing/cartpole_replay.h"
#include "models/q_networks.h"
#include "models/weights_wire.h"
#include "rpc/broadcast.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;

models::ModelSpec CartPoleSpec() {
  return models::MakeMlpSpec(models::MlpOptions{});  // 4-64-64-2
}

ApeXOptions Options(const std::string& endpoint) {
  ApeXOptions o;
  o.batch_size = 64;
  o.model.optimizer.lr = 5e-3;
  o.model.optimizer.max_grad_norm = 10;
  o.model.seed = 3;
  o.sampler.endpoints = {endpoint};
  o.sampler.seed = 5;
  o.log_interval = 0ms;
  return o;
}

// A world-1 learner with a frozen target network (no copy within the run)
// on fixed CartPole transitions: the metrics of its first 10 updates and of
// updates 300-310.
struct FixedTransitionsRun {
  std::unique_ptr<DqnLearner> learner;
  LearnerMetrics first, last;
};

FixedTransitionsRun TrainOnFixedTransitions(ApeXOptions o, const testing::CartPoleReplay& replay) {
  at::set_num_threads(1);
  o.sampler.endpoints = {replay.endpoint()};
  DqnOptions dqn;
  dqn.target_tau = 0;
  dqn.target_update_interval = 1000000;
  FixedTransitionsRun run;
  run.learner =
      std::make_unique<DqnLearner>(CartPoleSpec(), o, dqn, std::make_shared<Communicator>());
  for (int i = 0; i < 10; ++i) run.learner->Update();
  run.first = run.learner->TakeMetrics();
  for (int i = 0; i < 290; ++i) run.learner->Update();
  run.learner->TakeMetrics();
  for (int i = 0; i < 10; ++i) run.learner->Update();
  run.last = run.learner->TakeMetrics();
  return run;
}

// The online net regresses onto fixed double-Q targets, so its TD error on
// the fixed data set must fall by a wide margin.
TEST(DqnLearnerTest, FixedCartPoleTransitionsDriveTheTdErrorDown) {
  testing::CartPoleReplay replay(2000);
  ApeXOptions o = Options(replay.endpoint());
  o.publish_interval = 0;
  const FixedTransitionsRun run = TrainOnFixedTransitions(o, replay);
  const LearnerMetrics& first = run.first;
  const LearnerMetrics& last = run.last;
  EXPECT_EQ(last.updates, 310);
  EXPECT_GT(first.mean_abs_td, 0.5);
  EXPECT_LT(last.mean_abs_td, 0.3 * first.mean_abs_td)
      << "first " << first.mean_abs_td << " last " << last.mean_abs_td;
  EXPECT_LT(last.loss, first.loss);
  EXPECT_GT(last.grad_norm, 0);
  EXPECT_GT(last.update_to_weight, 0);
  EXPECT_LT(last.update_to_weight, 0.1);  // lr 5e-3: small steps next to the weights
  EXPECT_EQ(last.nonfinite_skipped, 0);
  EXPECT_EQ(last.priority_updates_lost, 0);
  // The priorities went back: the shard's items no longer all carry the
  // initial priority 1.
  EXPECT_GT(run.learner->sampler().stats().batches, 300);
}

// Every transition has a NaN observation: every update's gradient is NaN, so
// every optimizer step is skipped and counted, the model is untouched, and
// no NaN priority reaches the shard (which keeps the initial priorities 1).
TEST(DqnLearnerTest, NonFiniteGradientsSkipTheStepAndSendNoPriorities) {
  at::set_num_threads(1);
  testing::CartPoleReplay replay(64, /*seed=*/0, /*nan_observations=*/64);
  ApeXOptions o = Options(replay.endpoint());
  o.publish_interval = 0;
  DqnLearner learner(CartPoleSpec(), o, {}, std::make_shared<Communicator>());
  const at::Tensor before = learner.model().LocalShard().clone();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(learner.Update());
  const LearnerMetrics m = learner.TakeMetrics();
  EXPECT_EQ(m.updates, 5);
  EXPECT_EQ(m.nonfinite_skipped, 5);
  EXPECT_EQ(m.grad_norm, 0);  // no applied update in the interval
  EXPECT_EQ(learner.model().optimizer().step(), 0);
  EXPECT_TRUE(at::equal(before, learner.model().LocalShard()));
  const replay::TableInfo info = replay.service().table().Info();
  EXPECT_EQ(info.priorities.total, 64);
  EXPECT_EQ(info.priorities.sum, 64.0);
}

// The same on cuda:0 (skipped without a GPU): batches go through pinned
// memory and the copy stream (device_copies.h), priorities come back in one
// device-to-host copy per update, and the weights are published from the GPU.
TEST(CudaDqnLearnerTest, FixedCartPoleTransitionsDriveTheTdErrorDownOnCuda) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no GPU (" << TorchBuildDescription() << ")";
  testing::CartPoleReplay replay(2000);
  ApeXOptions o = Options(replay.endpoint());
  o.publish_interval = 50;
  o.publishing.publisher.endpoint = "tcp://127.0.0.1:*";
  o.publishing.publisher.snapshot_endpoint = "tcp://127.0.0.1:*";
  o.model.device = at::Device(at::kCUDA, 0);
  const FixedTransitionsRun run = TrainOnFixedTransitions(o, replay);
  EXPECT_LT(run.last.mean_abs_td, 0.3 * run.first.mean_abs_td)
      << "first " << run.first.mean_abs_td << " last " << run.last.mean_abs_td;
  run.learner->broadcaster().Flush();
  EXPECT_EQ(run.learner->broadcaster().send_errors(), 0);
}

// Full mode at world 1: the subscriber's version is the update count and its
// decoded weights are exactly FullParameters().
TEST(DqnLearnerTest, PublishedVersionDecodesToTheFullParameters) {
  at::set_num_threads(1);
  testing::CartPoleReplay replay(500);
  ApeXOptions o = Options(replay.endpoint());
  o.publish_interval = 5;
  DqnLearner learner(CartPoleSpec(), o, {}, std::make_shared<Communicator>());
  rpc::SubscriberOptions so;
  so.endpoint = learner.broadcaster().endpoint();
  so.snapshot_endpoint = learner.broadcaster().snapshot_endpoint();
  rpc::Subscriber subscriber(so);
  for (int i = 0; i < 10; ++i) learner.Update();
  std::optional<rpc::VersionedBlob> blob = subscriber.WaitNewer(9, 10s);
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(blob->version, 10u);
  const models::WeightsPart part = models::DecodeWeights(blob->payloads);
  const models::NamedTensors full = learner.model().FullParameters();
  ASSERT_EQ(part.tensors.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(part.tensors[i].first, full[i].first);
    EXPECT_TRUE(at::equal(part.tensors[i].second, full[i].second)) << full[i].first;
  }
}

// Two ranks, each sampling its 32 of the global 64 from the same replay
// shard through its own sampler, train one sharded model in lock step.
TEST(DqnLearnerTest, TwoRanksSampleTheirSharesAndDriveTheTdErrorDown) {
  std::string pattern = (std::filesystem::temp_directory_path() / "dqn_replay_XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  for (const auto& e : testing::RunWorkers("dqn_replay", 2, dir, std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << testing::ReadText(dir + "/rank0.err")
                              << testing::ReadText(dir + "/rank1.err");
  }
  for (int r = 0; r < 2; ++r) {
    std::istringstream in(testing::ReadText(dir + "/dqn.rank" + std::to_string(r) + ".txt"));
    int64_t items = 0;
    double first = 0, last = 0;
    in >> items >> first >> last;
    // 200 updates, and the next batch if its prefetch (on the feed's thread)
    // was answered before the count was read: under load it may not be.
    EXPECT_TRUE(items == 200 * 32 || items == 201 * 32) << r << ": " << items;
    EXPECT_GT(first, 0.5) << r;
    EXPECT_LT(last, 0.5 * first) << r << ": first " << first << " last " << last;
  }
  std::filesystem::remove_all(dir);
}

// A run stopped at update 10 and resumed from its checkpoint ends, at
// update 20, with exactly the online and target parameters of the run that
// was not stopped: the optimizer state, the target and the update count come
// back from the checkpoint, and each update's draw is seeded by its update
// number (the first learner's prefetched, thrown-away 11th batch does not
// shift the stream). Uniform replay: with prioritized replay the first draw
// after a resume sees one more update's priorities (they are sent
// asynchronously, as in Ape-X).
TEST(DqnLearnerTest, AResumedRunEndsWhereTheUninterruptedOneDoes) {
  std::string pattern = (std::filesystem::temp_directory_path() / "dqn_resume_XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  for (const auto& e : testing::RunWorkers("dqn_resume_exact", 2, dir, std::chrono::seconds(90))) {
    ASSERT_EQ(e.exit_code, 0) << testing::ReadText(dir + "/rank0.err")
                              << testing::ReadText(dir + "/rank1.err");
  }
  EXPECT_EQ(testing::ReadText(dir + "/resumed.updates"), "10");
  for (const char* net : {"online", "target"}) {
    const std::vector<double> straight = testing::ReadDoubles(dir + "/straight." + net + ".bin");
    const std::vector<double> resumed = testing::ReadDoubles(dir + "/resumed." + net + ".bin");
    ASSERT_FALSE(straight.empty());
    EXPECT_EQ(straight, resumed) << net;
  }
  std::filesystem::remove_all(dir);
}

// Rank 0's replay never has a batch while rank 1's always does: no update
// runs (rank 1 does not enter training alone), and when rank 0 is asked to
// stop both ranks agree, stop after the same update and write the final
// checkpoint together instead of failing on the group's timeout.
TEST(DqnLearnerTest, AStopWhileOneRankWaitsForReplayStopsBothRanksTogether) {
  std::string pattern = (std::filesystem::temp_directory_path() / "dqn_stop_XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  for (const auto& e : testing::RunWorkers("dqn_stop_waiting", 2, dir, std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << testing::ReadText(dir + "/rank0.err")
                              << testing::ReadText(dir + "/rank1.err");
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(testing::ReadText(dir + "/stop.rank" + std::to_string(r) + ".txt"), "0 000000 1 1")
        << r;
  }
  std::filesystem::remove_all(dir);
}

TEST(WeightsBroadcasterTest, PartsModeOffsetsFixedPortsByTheRank) {
  EXPECT_EQ(OffsetEndpointPort("tcp://10.0.0.2:47100", 3), "tcp://10.0.0.2:47103");
  EXPECT_EQ(OffsetEndpointPort("tcp://127.0.0.1:*", 3), "tcp://127.0.0.1:*");
  EXPECT_THROW(OffsetEndpointPort("inproc://weights", 1), InvalidArgument);
  EXPECT_EQ(ParsePublishMode("parts"), PublishMode::kParts);
  EXPECT_THROW(ParsePublishMode("half"), InvalidArgument);
}

TEST(DqnLearnerTest, BatchNotDivisibleByTheWorldIsRejected) {
  ApeXOptions o;
  o.batch_size = 10;
  EXPECT_THROW(o.Validate(3), InvalidArgument);
  o.batch_size = 12;
  EXPECT_NO_THROW(o.Validate(3));
  DqnOptions dqn;
  dqn.target_tau = 0;
  dqn.target_update_interval = 0;
  EXPECT_THROW(dqn.Validate(), InvalidArgument);
  dqn.target_tau = 1.5;
  dqn.target_update_interval = 1;
  EXPECT_THROW(dqn.Validate(), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::learner
