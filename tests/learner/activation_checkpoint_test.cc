// Activation checkpointing per unit (activation_checkpoint.h): the same
// gradients and Adam steps as without it, on the direct path (world 1) and
// on 2 real Gloo ranks (full_shard, shard_grad_op, no_shard), for the plain
// MLP and the residual MLP torso; and fewer bytes held by autograd between
// forward and backward, counted by a counting CPU allocator.

#include "learner/fsdp/activation_checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "learner/fsdp/sharded_model.h"
#include "learner/testing/counting_allocator.h"
#include "models/residual_networks.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;
using th::MaxAbsDiff;

std::vector<double> Doubles(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

TEST(ActivationCheckpointTest, CheckpointedUnitGivesTheGradientsOfTheUnitItself) {
  UnitForward run = [](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    return at::tanh(at::matmul(x, p[0]) + p[1]).pow(2);
  };
  at::Tensor w = at::randn({5, 3}, at::kDouble).requires_grad_(true);
  at::Tensor b = at::randn({3}, at::kDouble).requires_grad_(true);
  at::Tensor x0 = at::randn({4, 5}, at::kDouble).requires_grad_(true);
  at::Tensor upstream = at::randn({4, 3}, at::kDouble);

  at::Tensor x = x0 * 2;  // a non-leaf input: its gradient must flow on to x0
  at::Tensor plain = run(x, {w, b});
  plain.backward(upstream);
  const std::vector<double> gw = Doubles(w.grad()), gb = Doubles(b.grad()), gx = Doubles(x0.grad());
  w.mutable_grad().zero_();
  b.mutable_grad().zero_();
  x0.mutable_grad().zero_();

  at::Tensor checkpointed = CheckpointedForward(run, x0 * 2, {w, b}, "unit");
  EXPECT_TRUE(at::equal(checkpointed, plain));
  ASSERT_TRUE(checkpointed.grad_fn());
  EXPECT_NE(checkpointed.grad_fn()->name().find("CheckpointedUnitBackward(unit)"),
            std::string::npos);
  // One node: nothing of the unit's own graph (tanh, pow, ...) was saved.
  EXPECT_EQ(checkpointed.grad_fn()->next_edges().size(), 3u);
  checkpointed.backward(upstream);
  EXPECT_EQ(MaxAbsDiff(Doubles(w.grad()), gw), 0);
  EXPECT_EQ(MaxAbsDiff(Doubles(b.grad()), gb), 0);
  EXPECT_EQ(MaxAbsDiff(Doubles(x0.grad()), gx), 0);

  // Without anything to differentiate it is the unit itself, no node.
  at::NoGradGuard no_grad;
  EXPECT_FALSE(CheckpointedForward(run, x0, {w, b}, "unit").grad_fn());
}

// Trains `c` at world 1 (direct path) for kSteps; returns the gradient after
// step 0's backward and the parameters after the last step.
std::pair<std::vector<double>, std::vector<double>> TrainDirect(th::TrainCase c, bool on) {
  c.options.sharding.activation_checkpointing = on;
  models::ModelSpec spec = th::CaseSpec(c.model);
  ShardedModel model(spec, c.options, nullptr);
  EXPECT_TRUE(model.direct());
  std::vector<double> grad;
  for (int step = 0; step < th::kSteps; ++step) {
    auto [x, y] = th::GlobalBatch(spec, step);
    model.ZeroGrad();
    (model.Forward(x) - y).pow(2).mean().backward();
    if (step == 0) grad = Doubles(model.LocalGrad());
    model.Step();
  }
  return {grad, th::Flatten(model.FullParameters())};
}

TEST(ActivationCheckpointTest, WorldOneGradientsAndAdamStepsMatchTrainingWithoutIt) {
  for (const th::TrainCase& c : th::ActivationCheckpointCases()) {
    SCOPED_TRACE(c.name);
    auto [grad_off, params_off] = TrainDirect(c, false);
    auto [grad_on, params_on] = TrainDirect(c, true);
    EXPECT_LT(MaxAbsDiff(grad_on, grad_off), 1e-13);
    EXPECT_LT(MaxAbsDiff(params_on, params_off), 1e-12);
    EXPECT_LT(MaxAbsDiff(params_on, th::Flatten(th::PlainTrain(c))), 1e-10);
  }
}

// Bytes of CPU tensors alive between forward and backward, and the peak over
// forward + backward, above what was alive before the forward.
std::pair<int64_t, int64_t> ActivationBytes(const models::ModelSpec& spec, bool on) {
  th::CpuAllocationCounter& counter = th::CpuAllocationCounter::Installed();
  ShardedModelOptions options;
  options.sharding.activation_checkpointing = on;
  ShardedModel model(spec, options, nullptr);
  at::Tensor x = at::randn({256, spec.sample_shape[0]});
  model.ZeroGrad();
  counter.Mark();
  at::Tensor q = model.Forward(x);
  const int64_t held = counter.held_bytes();
  q.pow(2).mean().backward();
  return {held, counter.peak_bytes()};
}

TEST(ActivationCheckpointTest, WorldOneHoldsFewerActivationBytesBetweenForwardAndBackward) {
  // 4 pre-LayerNorm blocks of width 64 on a batch of 256: each block saves
  // its LayerNorm output and statistics, two linear outputs and a ReLU's.
  models::ModelSpec spec = models::MakeResidualMlpSpec(
      {.input_dim = 8, .width = 64, .blocks = 4, .num_actions = 4, .dueling = false});
  auto [held_off, peak_off] = ActivationBytes(spec, false);
  auto [held_on, peak_on] = ActivationBytes(spec, true);
  RecordProperty("held_bytes_off", std::to_string(held_off));
  RecordProperty("held_bytes_on", std::to_string(held_on));
  RecordProperty("peak_bytes_off", std::to_string(peak_off));
  RecordProperty("peak_bytes_on", std::to_string(peak_on));
  // One unit per layer (7): checkpointed, each keeps only its input, a
  // [256, 64] float tensor (64 KiB) or the observations. Without it each
  // block also keeps its LayerNorm's output and its ReLU's (the linears
  // save those as their inputs): over twice as much.
  const int64_t unit_input = 256 * 64 * 4;
  EXPECT_LE(held_on, 7 * unit_input) << held_on;
  EXPECT_LT(held_on * 2, held_off) << held_on << " vs " << held_off;
  EXPECT_LT(peak_on, peak_off);
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/activation_checkpoint_test_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir == nullptr ? "/tmp" : dir;
}

std::pair<int64_t, int64_t> ReadBytes(const std::string& path) {
  std::ifstream f(path);
  int64_t held = -1, peak = -1;
  f >> held >> peak;
  return {held, peak};
}

TEST(ActivationCheckpointTest, TwoGlooRanksMatchTrainingWithoutItAndHoldFewerActivationBytes) {
  const std::string dir = MakeTempDir();
  for (const th::WorkerExit& e :
       th::RunWorkers("activation_checkpointing", 2, dir, std::chrono::seconds(120))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir + "/rank0.err")
                              << th::ReadText(dir + "/rank1.err");
  }
  for (const th::TrainCase& c : th::ActivationCheckpointCases()) {
    SCOPED_TRACE(c.name);
    const std::string off = dir + "/ac_" + c.name + "_off";
    const std::string on = dir + "/ac_" + c.name + "_on";
    for (int r = 0; r < 2; ++r) {
      const std::string rank = ".rank" + std::to_string(r);
      EXPECT_LT(MaxAbsDiff(th::ReadDoubles(on + ".grad" + rank + ".bin"),
                           th::ReadDoubles(off + ".grad" + rank + ".bin")),
                1e-13)
          << rank;
      auto [held_off, peak_off] = ReadBytes(off + ".bytes" + rank + ".txt");
      auto [held_on, peak_on] = ReadBytes(on + ".bytes" + rank + ".txt");
      EXPECT_GT(held_on, 0);
      // Only the residual MLP's blocks save more than their input (its
      // LayerNorms' outputs and statistics); the plain MLP's linears save
      // just their inputs, which checkpointing keeps too.
      if (c.model == "residual_mlp") {
        EXPECT_LT(held_on, held_off) << rank;
      }
      RecordProperty(c.name + "_held_off" + rank, std::to_string(held_off));
      RecordProperty(c.name + "_held_on" + rank, std::to_string(held_on));
    }
    const std::vector<double> params_on = th::ReadDoubles(on + ".params.bin");
    EXPECT_LT(MaxAbsDiff(params_on, th::ReadDoubles(off + ".params.bin")), 1e-12);
    EXPECT_LT(MaxAbsDiff(params_on, th::Flatten(th::PlainTrain(c))), 1e-10);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlswarm::learner
