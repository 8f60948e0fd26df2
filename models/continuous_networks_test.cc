#include "models/continuous_networks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/q_network.h"

namespace rlswarm::models {
namespace {

TEST(ContinuousNetworksTest, PolicyActionsStayWithinEachDimensionsBounds) {
  ModelSpec spec = MakeDeterministicPolicySpec({.observation_dim = 3,
                                                .action_dim = 2,
                                                .hidden_sizes = {16},
                                                .action_low = {-2.0f, 0.0f},
                                                .action_high = {2.0f, 1.0f}});
  EXPECT_EQ(spec.num_actions, 2);
  QNetwork net(spec, 1, at::kDouble);
  // Large inputs saturate tanh: the actions reach (but never pass) the bounds.
  const at::Tensor a = net.Forward(1e3 * at::randn({256, 3}, at::kDouble));
  ASSERT_EQ(a.sizes(), (at::IntArrayRef{256, 2}));
  const at::Tensor first = a.select(1, 0), second = a.select(1, 1);
  EXPECT_LE(first.max().item<double>(), 2.0);
  EXPECT_GE(first.min().item<double>(), -2.0);
  EXPECT_GT(first.abs().max().item<double>(), 1.9);
  EXPECT_LE(second.max().item<double>(), 1.0);
  EXPECT_GE(second.min().item<double>(), 0.0);
}

// The two critics are independent networks: each output column is the plain
// MLP of its own slice of every stacked parameter, and the gradient of Q1
// touches none of Q2's parameters.
TEST(ContinuousNetworksTest, TwinCriticsAreTwoIndependentMlps) {
  ModelSpec spec =
      MakeTwinCriticSpec({.observation_dim = 3, .action_dim = 1, .hidden_sizes = {8, 8}});
  EXPECT_EQ(spec.sample_shape, (std::vector<int64_t>{4}));
  QNetwork net(spec, 5, at::kDouble);
  const at::Tensor x = at::randn({6, 4}, at::kDouble);
  const at::Tensor q = net.Forward(x);
  ASSERT_EQ(q.sizes(), (at::IntArrayRef{6, 2}));
  const NamedTensors p = net.NamedParameters();  // fc0.w, fc0.b, fc1.w, fc1.b, q.w, q.b
  ASSERT_EQ(p.size(), 6u);
  for (int c = 0; c < 2; ++c) {
    at::Tensor h = x;
    for (int layer = 0; layer < 3; ++layer) {
      h = at::linear(h, p[2 * layer].second[c], p[2 * layer + 1].second[c]);
      if (layer < 2) h = at::relu(h);
    }
    EXPECT_TRUE(at::allclose(q.select(1, c), h.squeeze(1))) << c;
  }
  EXPECT_FALSE(at::allclose(q.select(1, 0), q.select(1, 1)));  // differently initialised

  std::vector<at::Tensor> leaves;
  for (const auto& [name, t] : p) leaves.push_back(t.detach().clone().requires_grad_(true));
  at::Tensor h = x;
  for (int layer = 0; layer < 3; ++layer) {
    h = spec.layers[layer].forward(h, {leaves[2 * layer], leaves[2 * layer + 1]});
  }
  h.select(1, 0).sum().backward();
  for (const at::Tensor& leaf : leaves) {
    EXPECT_GT(leaf.grad()[0].abs().sum().item<double>(), 0);
    EXPECT_EQ(leaf.grad()[1].abs().sum().item<double>(), 0);
  }
}

TEST(ContinuousNetworksTest, BadOptionsNameTheProblem) {
  EXPECT_THROW(MakeDeterministicPolicySpec({.action_dim = 0}), InvalidArgument);
  EXPECT_THROW(MakeDeterministicPolicySpec({.action_low = {1.0f}, .action_high = {1.0f}}),
               InvalidArgument);
  EXPECT_THROW(MakeDeterministicPolicySpec(
                   {.action_dim = 2, .action_low = {-1.0f, -1.0f, -1.0f}, .action_high = {1.0f}}),
               InvalidArgument);
  EXPECT_THROW(MakeTwinCriticSpec({.hidden_sizes = {0}}), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::models
