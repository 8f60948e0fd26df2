// The training-health metrics of ShardedModel::Step() (StepHealth): the
// global gradient norm, the update-to-weight ratio and the skip of a
// non-finite gradient, at world 1 in process (the direct path) and on real
// Gloo groups of 1 and 2 ranks (the sharded path, testing/harness.h).

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

// clip_grad.h uses torch::Tensor without including its definition.
// clang-format off
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
// clang-format on

#include "learner/fsdp/sharded_model.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;

const th::TrainCase& ClippedCase() {
  static const th::TrainCase clipped = [] {
    for (const th::TrainCase& c : th::EquivalenceCases()) {
      if (c.name == "full_shard_clipped") return c;
    }
    throw std::runtime_error("no case full_shard_clipped");
  }();
  return clipped;
}

// torch's total norm (clip_grad_norm_'s return value) of the full-batch
// gradient of step 0 at the initial parameters, with a leaf per parameter.
double TorchTotalGradNormOfStep0() {
  const th::TrainCase& c = ClippedCase();
  models::ModelSpec spec = th::CaseSpec(c.model);
  std::vector<at::Tensor> leaves;
  std::vector<std::vector<at::Tensor>> layer_params;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    layer_params.emplace_back();
    for (size_t p = 0; p < spec.layers[l].params.size(); ++p) {
      at::Tensor t = models::InitParam(spec, l, p, c.options.seed).requires_grad_(true);
      leaves.push_back(t);
      layer_params.back().push_back(t);
    }
  }
  auto [x, y] = th::GlobalBatch(spec, 0);
  at::Tensor out = x;
  for (size_t l = 0; l < spec.layers.size(); ++l)
    out = spec.layers[l].forward(out, layer_params[l]);
  (out - y).pow(2).mean().backward();
  return torch::nn::utils::clip_grad_norm_(leaves, 1e300);
}

double Norm(const std::vector<double>& v) {
  double sq = 0;
  for (double x : v) sq += x * x;
  return std::sqrt(sq);
}

double NormOfDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) sq += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sq);
}

// Checks what RunHealthScenario wrote to `dir` for `world_size` ranks.
void ExpectHealth(const std::string& dir, int world_size) {
  std::vector<std::vector<double>> params;
  for (int k = 0; k <= 4; ++k) {
    params.push_back(th::ReadDoubles(dir + "/health_params" + std::to_string(k) + ".bin"));
    ASSERT_FALSE(params.back().empty()) << k;
  }
  const double torch_norm = TorchTotalGradNormOfStep0();
  // By hand: optimizer step 1 took params0 to params1.
  const double ratio = NormOfDifference(params[1], params[0]) / Norm(params[0]);
  for (int r = 0; r < world_size; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<double> v =
        th::ReadDoubles(dir + "/health.rank" + std::to_string(r) + ".bin");
    ASSERT_EQ(v.size(), 9u);
    // The clipped case clips at 0.05: the reported norm is the one before.
    EXPECT_GT(v[0], ClippedCase().options.optimizer.max_grad_norm);
    EXPECT_NEAR(v[0], torch_norm, 1e-10 * torch_norm);
    EXPECT_NEAR(v[1], ratio, 1e-9 * ratio);
    EXPECT_GT(v[1], 0);
    EXPECT_EQ(v[2], 1);  // the ratio after step 1 is optimizer step 1's
    EXPECT_EQ(v[3], 1);  // step 2 skipped on every rank...
    EXPECT_EQ(v[4], 1);
    EXPECT_EQ(v[5], 1);  // ...leaving this rank's shard and optimizer state alone
    EXPECT_EQ(v[6], 0);  // step 3 trains again
    EXPECT_EQ(v[7], 1);
    EXPECT_EQ(v[8], 3);  // optimizer steps: 0, 1 and 3
  }
  EXPECT_EQ(params[3], params[2]);
  EXPECT_GT(NormOfDifference(params[4], params[3]), 0);
}

TEST(StepHealthTest, DirectPathAtWorldOneReportsNormRatioAndSkipsNonFinite) {
  const std::string dir = std::filesystem::temp_directory_path() / "rlswarm_step_health_XXXXXX";
  std::string tmpl = dir;
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  ShardedModel model(th::CaseSpec(ClippedCase().model), ClippedCase().options, nullptr);
  ASSERT_TRUE(model.direct());
  th::RunHealthScenario(model, 0, 1, tmpl);
  ExpectHealth(tmpl, 1);
  EXPECT_EQ(model.comm_stats().collectives, 0);
  std::filesystem::remove_all(tmpl);
}

class StepHealthGroupTest : public ::testing::TestWithParam<int> {};

TEST_P(StepHealthGroupTest, ShardedPathReportsGlobalNormRatioAndSkipsNonFiniteOnEveryRank) {
  std::string tmpl = std::filesystem::temp_directory_path() / "rlswarm_step_health_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const int world = GetParam();
  std::vector<th::WorkerExit> exits =
      th::RunWorkers("health", world, tmpl, std::chrono::seconds(60));
  ASSERT_EQ(exits.size(), static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(exits[r].exit_code, 0)
        << "rank " << r << ": " << th::ReadText(tmpl + "/rank" + std::to_string(r) + ".err");
  }
  ExpectHealth(tmpl, world);
  std::filesystem::remove_all(tmpl);
}

INSTANTIATE_TEST_SUITE_P(Worlds, StepHealthGroupTest, ::testing::Values(1, 2),
                         [](const auto& param_info) {
                           return "world" + std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace rlswarm::learner
