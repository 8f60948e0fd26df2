// Communicator's side of a collective on a one-rank fake group that carries
// a real backend's name (testing/fake_group.h): how it waits (no host
// timeout on NCCL), which all-gather it issues (the flat one where the
// backend has it), how long it holds finished Works for device timings, and
// where its busy time comes from. The NCCL path of a ShardedModel runs on
// the same fake group and must train as the direct path does.

#include "learner/dist/communicator.h"

#include <gtest/gtest.h>

#include <chrono>

#include "learner/fsdp/sharded_model.h"
#include "learner/testing/fake_group.h"
#include "models/q_networks.h"

namespace rlswarm::learner {
namespace {

using std::chrono::milliseconds;
using testing::FakeGroup;

constexpr milliseconds kTimeout{5000};

struct FakeNccl {
  c10::intrusive_ptr<FakeGroup> data = c10::make_intrusive<FakeGroup>("nccl");
  c10::intrusive_ptr<FakeGroup> control = c10::make_intrusive<FakeGroup>("gloo");
  Communicator comm{data, 0, 1, kTimeout, control};
};

TEST(CommunicatorTest, NcclCollectivesAreWaitedOnWithoutAHostTimeout) {
  FakeNccl nccl;
  EXPECT_TRUE(nccl.comm.stream_ordered());
  at::Tensor full = at::empty({6});
  nccl.comm.AllGather(at::ones({6}), full, "gather").Wait();
  nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
  nccl.comm.ReduceScatterSum(at::ones({4}), ReduceScatterImpl::kNative, "reduce");
  for (milliseconds t : nccl.data->log()->wait_timeouts) EXPECT_EQ(t, ::kNoTimeout);
  EXPECT_EQ(nccl.data->log()->wait_timeouts.size(), 3u);
  // The control plane (Gloo, CPU tensors) blocks the host, bounded.
  nccl.comm.ControlAllReduceSum(at::ones({1}), "flag");
  ASSERT_EQ(nccl.control->log()->wait_timeouts.size(), 1u);
  EXPECT_EQ(nccl.control->log()->wait_timeouts[0], kTimeout);

  auto gloo = c10::make_intrusive<FakeGroup>("gloo");
  Communicator comm(gloo, 0, 1, kTimeout);
  EXPECT_FALSE(comm.stream_ordered());
  comm.AllReduceSum(at::ones({3}), "sum").Wait();
  ASSERT_EQ(gloo->log()->wait_timeouts.size(), 1u);
  EXPECT_EQ(gloo->log()->wait_timeouts[0], kTimeout);
}

TEST(CommunicatorTest, AllGatherWritesIntoTheOutputWhereTheBackendCan) {
  FakeNccl nccl;
  at::Tensor shard = at::arange(5, at::kFloat);
  at::Tensor full = at::zeros({5});
  nccl.comm.AllGather(shard, full, "gather").Wait();
  EXPECT_TRUE(at::equal(full, shard));
  ASSERT_EQ(nccl.data->log()->calls, std::vector<std::string>{"_allgather_base"});
  EXPECT_EQ(nccl.data->log()->gather_outputs.at(0), full.data_ptr());

  // Gloo: the flat form from LibTorch 2.x on; 1.13's Gloo has only the list.
  auto gloo = c10::make_intrusive<FakeGroup>("gloo");
  Communicator comm(gloo, 0, 1, kTimeout);
  at::Tensor out = at::zeros({5});
  comm.AllGather(shard, out, "gather").Wait();
  EXPECT_TRUE(at::equal(out, shard));
  EXPECT_EQ(gloo->log()->calls.at(0), TORCH_VERSION_MAJOR >= 2 ? "_allgather_base" : "allgather");
}

// NCCL's future completes when the collective is queued: the host's view of
// its duration is ~0 and must not pass for the collective's time.
TEST(CommunicatorTest, NcclBusyTimeComesOnlyFromDeviceTimings) {
  FakeNccl nccl;
  nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
  EXPECT_EQ(nccl.comm.stats().collectives, 1);
  EXPECT_EQ(nccl.comm.stats().busy_seconds, 0.0);

  nccl.comm.set_collect_device_timings(true);
  for (int i = 0; i < 10; ++i) nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
  nccl.comm.CollectDeviceTimings();
  // The fake times each collective at 1 ms; LibTorch 1.13 has no device
  // timing at all (the busy time then stays unknown: 0).
  EXPECT_NEAR(nccl.comm.stats().busy_seconds, TORCH_VERSION_MAJOR >= 2 ? 0.010 : 0.0, 1e-6);
}

// Host-timed collectives (Gloo) add their spans to a union beside the sum;
// collectives both in flight at once count once in the union (the overlap
// itself is SpanUnionTest's); NCCL's host spans say nothing and stay out.
TEST(CommunicatorTest, GlooCollectivesCountTheUnionOfTheirSpans) {
  auto gloo = c10::make_intrusive<FakeGroup>("gloo");
  Communicator comm(gloo, 0, 1, kTimeout);
  PendingCollective a = comm.AllReduceSum(at::ones({3}), "a");
  PendingCollective b = comm.AllReduceSum(at::ones({3}), "b");
  b.Wait();
  a.Wait();
  EXPECT_GT(comm.stats().span_union_seconds, 0.0);
  EXPECT_LE(comm.stats().span_union_seconds, comm.stats().busy_seconds + 1e-9);
  comm.ResetStats();
  EXPECT_EQ(comm.stats().span_union_seconds, 0.0);

  FakeNccl nccl;
  nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
  EXPECT_EQ(nccl.comm.stats().span_union_seconds, 0.0);
}

TEST(CommunicatorTest, DeviceTimingsHoldOnlyTheWorksTheDeviceHasNotFinished) {
  FakeNccl nccl;
  nccl.comm.set_collect_device_timings(true);
  for (int i = 0; i < 1000; ++i) {
    nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
    ASSERT_EQ(nccl.comm.device_timings_held(), 0u) << "after " << i + 1;
  }
  // A device far behind: never more than the bound, and the total is then
  // unknown rather than short.
  nccl.data->hold_completions(true);
  for (int i = 0; i < 1000; ++i) {
    nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
    ASSERT_LE(nccl.comm.device_timings_held(), DeviceTimings::kMaxHeld);
  }
  EXPECT_EQ(nccl.comm.device_timings_held(), DeviceTimings::kMaxHeld);
  nccl.data->CompleteAll();
  nccl.comm.CollectDeviceTimings();
  EXPECT_EQ(nccl.comm.device_timings_held(), 0u);
  EXPECT_EQ(nccl.comm.stats().busy_seconds, 0.0);

  // Completed later, before the device timings are read: all of them count.
  nccl.comm.ResetStats();
  for (int i = 0; i < 5; ++i) nccl.comm.AllReduceSum(at::ones({3}), "sum").Wait();
  EXPECT_EQ(nccl.comm.device_timings_held(), 5u);
  nccl.data->CompleteAll();
  nccl.comm.CollectDeviceTimings();
  EXPECT_NEAR(nccl.comm.stats().busy_seconds, TORCH_VERSION_MAJOR >= 2 ? 0.005 : 0.0, 1e-6);
}

// The sharded path through a 1-rank "NCCL" group (flat all-gathers into the
// gathered units, native reduce-scatters, stream-ordered waits) trains
// exactly as the direct path without a group.
TEST(CommunicatorTest, ShardedModelOnAOneRankNcclGroupTrainsAsTheDirectPath) {
  models::MlpOptions mlp;
  mlp.input_dim = 4;
  mlp.hidden_sizes = {16, 16};
  const models::ModelSpec spec = models::MakeMlpSpec(mlp);
  ShardedModelOptions options;
  options.sharding.strategy = ShardingStrategy::kFullShard;
  FakeNccl nccl;
  // Not owned: `nccl` outlives the model.
  ShardedModel sharded(spec, options,
                       std::shared_ptr<Communicator>(std::shared_ptr<void>{}, &nccl.comm));
  ShardedModel direct(spec, options, std::make_shared<Communicator>());
  ASSERT_FALSE(sharded.direct());
  ASSERT_TRUE(direct.direct());
  at::manual_seed(3);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor x = at::randn({8, 4});
    const at::Tensor y = at::randn({8, 2});
    for (ShardedModel* m : {&sharded, &direct}) {
      m->ZeroGrad();
      (m->Forward(x) - y).pow(2).mean().backward();
      m->Step();
    }
  }
  EXPECT_TRUE(at::allclose(sharded.LocalShard(), direct.LocalShard(), 1e-6, 1e-7));
  int64_t flat_gathers = 0;
  for (const std::string& call : nccl.data->log()->calls) {
    EXPECT_NE(call, "allgather");  // the list form copies; NCCL's flat one does not
    flat_gathers += call == "_allgather_base";
  }
  EXPECT_GT(flat_gathers, 0);
}

}  // namespace
}  // namespace rlswarm::learner
