// In-process ShardedModel tests at world size 1 (no ProcessGroup), plus the
// pure layout and options logic. Multi-rank behaviour: sharded_training_test.cc.

#include "learner/fsdp/sharded_model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "learner/testing/harness.h"
#include "models/q_networks.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;

double MaxAbsDiff(const models::NamedTensors& a, const models::NamedTensors& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(
        m, (a[i].second.to(at::kDouble) - b[i].second.to(at::kDouble)).abs().max().item<double>());
  }
  return m;
}

models::NamedTensors TrainAtWorld1(const th::TrainCase& c, CommStats* stats = nullptr) {
  models::ModelSpec spec = th::CaseSpec(c.model);
  ShardedModel model(spec, c.options, nullptr);
  for (int step = 0; step < th::kSteps; ++step) {
    auto [x, y] = th::GlobalBatch(spec, step);
    model.ZeroGrad();
    at::Tensor q = model.Forward(x);
    (q - y.to(q.scalar_type())).pow(2).mean().backward();
    model.Step();
  }
  if (stats != nullptr) *stats = model.comm_stats();
  return model.FullParameters();
}

TEST(ShardedModelTest, WorldOneMatchesPlainLibTorchAndIssuesNoCollective) {
  for (const th::TrainCase& c : th::EquivalenceCases()) {
    if (c.tolerance < 0) continue;  // the negative control only fails with N > 1
    CommStats stats;
    models::NamedTensors got = TrainAtWorld1(c, &stats);
    EXPECT_LT(MaxAbsDiff(got, th::PlainTrain(c)), c.tolerance < 1e-9 ? 1e-12 : c.tolerance)
        << c.name;
    EXPECT_EQ(stats.collectives, 0) << c.name;
  }
}

TEST(ShardedModelTest, LoadFullParametersRoundTripsThroughFullParameters) {
  models::ModelSpec spec = th::CaseSpec("mlp");
  ShardedModelOptions options_a, options_b;
  options_a.seed = 1;
  options_b.seed = 2;
  ShardedModel a(spec, options_a, nullptr);
  ShardedModel b(spec, options_b, nullptr);
  EXPECT_GT(MaxAbsDiff(a.FullParameters(), b.FullParameters()), 0);
  b.LoadFullParameters(a.FullParameters());
  EXPECT_EQ(MaxAbsDiff(a.FullParameters(), b.FullParameters()), 0);
  EXPECT_THROW(b.LoadFullParameters({}), InvalidArgument);
}

TEST(ShardedModelTest, TargetNetworkIsALocalCopyWithoutGradientsOrOptimizer) {
  models::ModelSpec spec = th::CaseSpec("minatar");
  ShardedModelOptions options;
  options.optimizer.lr = 0.05;
  ShardedModel online(spec, options, nullptr);
  std::unique_ptr<ShardedModel> target = online.MakeTarget();
  EXPECT_EQ(target->LocalStateBytes().grads, 0);
  EXPECT_EQ(target->LocalStateBytes().optimizer, 0);
  EXPECT_THROW(target->Step(), FailedPrecondition);
  auto [x, y] = th::GlobalBatch(spec, 0);
  EXPECT_TRUE(at::equal(online.Forward(x), target->Forward(x)));
  online.ZeroGrad();
  (online.Forward(x) - y.to(at::kFloat)).pow(2).mean().backward();
  online.Step();
  EXPECT_FALSE(at::equal(online.Forward(x), target->Forward(x)));
  target->PolyakUpdate(online, 1.0);
  EXPECT_TRUE(at::equal(online.Forward(x), target->Forward(x)));
}

TEST(ShardedModelTest, UnshardedStateBytesCountParamsGradsAndAdamMoments) {
  models::ModelSpec spec = models::MakeMlpSpec({});
  ShardedModel model(spec, {}, nullptr);
  EXPECT_EQ(model.UnshardedStateBytes().Total(), spec.Numel() * 4 * 4);
  EXPECT_EQ(model.LocalStateBytes().Total(), model.UnshardedStateBytes().Total());
}

TEST(ShardLayoutTest, UnitsSplitEvenlyWithZeroPaddingAtTheEnd) {
  models::ModelSpec spec = th::CaseSpec("mlp");
  std::vector<UnitLayout> units = MakeUnitLayouts(spec, {2, 1}, 3);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].name, "fc0+fc1");
  EXPECT_EQ(units[0].numel, spec.layers[0].Numel() + spec.layers[1].Numel());
  EXPECT_EQ(units[1].local_offset, units[0].shard_numel);
  for (const UnitLayout& u : units) {
    EXPECT_EQ(u.padded_numel % 3, 0);
    EXPECT_LT(u.padded_numel - u.numel, 3);
    EXPECT_EQ(u.ValidNumel(0) + u.ValidNumel(1) + u.ValidNumel(2), u.numel);
  }
  EXPECT_EQ(LocalNumel(units), units[0].shard_numel + units[1].shard_numel);
}

TEST(ShardingOptionsTest, RejectsWrappingThatDoesNotCoverTheModel) {
  ShardingOptions o;
  o.layers_per_unit = {1, 1};
  EXPECT_THROW(o.Validate(3), InvalidArgument);
  o.layers_per_unit = {0, 3};
  EXPECT_THROW(o.Validate(3), InvalidArgument);
  o.layers_per_unit = {1, 2};
  EXPECT_NO_THROW(o.Validate(3));
  o.mixed_precision.param_dtype = at::kInt;
  EXPECT_THROW(o.Validate(3), InvalidArgument);
  EXPECT_EQ(ParseShardingStrategy("shard_grad_op"), ShardingStrategy::kShardGradOp);
  EXPECT_THROW(ParseShardingStrategy("zero3"), InvalidArgument);
  EXPECT_EQ(ParseReduceScatterImpl("allreduce"), ReduceScatterImpl::kAllReduce);
  EXPECT_THROW(OptimizerOptions{.lr = 0}.Validate(), InvalidArgument);
  EXPECT_THROW(OptimizerOptions{.centered = true}.Validate(), InvalidArgument);  // adam
}

TEST(FlatOptimizerTest, StateRoundTripsForCheckpoints) {
  at::Tensor p = at::rand({10}), g = at::rand({10});
  FlatOptimizer a({}, p, g);
  a.Step();
  at::Tensor p2 = p.clone(), g2 = g.clone();
  FlatOptimizer b({}, p2, g2);
  b.LoadState(a.State());
  EXPECT_EQ(b.step(), 1);
  a.Step();
  b.Step();
  EXPECT_TRUE(at::equal(p, p2));
  EXPECT_EQ(a.StateBytes(), 2 * 10 * 4);
}

// Centered RMSprop keeps the gradient's running mean beside the square
// average: both travel in checkpoints, and an uncentered state (no
// "grad_avg") is refused by name instead of restarting the mean at zero.
TEST(FlatOptimizerTest, CenteredRmsPropStateRoundTripsAndNeedsItsGradientAverage) {
  const OptimizerOptions centered{
      .kind = OptimizerKind::kRmsProp, .lr = 0.1, .alpha = 0.95, .eps = 0.01, .centered = true};
  at::Tensor p = at::rand({10}), g = at::rand({10});
  const at::Tensor start = p.clone();
  FlatOptimizer a(centered, p, g);
  a.Step();
  std::vector<std::string> names;
  for (const auto& [name, t] : a.State()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"square_avg", "grad_avg", "step"}));
  EXPECT_EQ(a.StateBytes(), 2 * 10 * 4);
  at::Tensor p2 = p.clone(), g2 = g.clone();
  FlatOptimizer b(centered, p2, g2);
  b.LoadState(a.State());
  a.Step();
  b.Step();
  EXPECT_TRUE(at::equal(p, p2));

  OptimizerOptions plain = centered;
  plain.centered = false;
  at::Tensor p3 = p.clone(), g3 = g.clone();
  FlatOptimizer uncentered(plain, p3, g3);
  uncentered.Step();
  EXPECT_EQ(uncentered.StateBytes(), 10 * 4);
  try {
    b.LoadState(uncentered.State());
    ADD_FAILURE() << "an uncentered state loaded into centered RMSprop";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'grad_avg'"), std::string::npos) << e.what();
  }
  // From the same start and gradient, a different step: centering divides
  // by the spread, not the root mean square.
  at::Tensor pc = start.clone(), pu = start.clone();
  FlatOptimizer c1(centered, pc, g), u1(plain, pu, g);
  c1.Step();
  u1.Step();
  EXPECT_FALSE(at::allclose(pc, pu));
}

}  // namespace
}  // namespace rlswarm::learner
