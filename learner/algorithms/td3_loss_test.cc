#include "learner/algorithms/td3_loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

at::Tensor T(std::vector<double> v) { return at::tensor(v, at::kDouble); }

TEST(Td3LossTest, TargetActionsAreSmoothedWithClippedNoiseAndStayInBounds) {
  // Bounds [-2, 2]: half-range 2, so sigma 0.2 -> 0.4 per unit of noise and
  // the clip 0.5 -> 1.0.
  const ActionBounds bounds{T({-2.0}), T({2.0})};
  const at::Tensor actions = T({0.0, 0.0, 1.9, -1.0}).reshape({4, 1});
  const at::Tensor noise = T({1.0, 10.0, 1.0, -10.0}).reshape({4, 1});
  const at::Tensor smoothed = SmoothTargetActions(actions, noise, bounds, {});
  // 0 + 0.4; 0 + clip(4.0) = 1.0; 1.9 + 0.4 -> bound 2; -1 - clip(4.0) = -2.
  EXPECT_TRUE(at::allclose(smoothed.reshape(-1), T({0.4, 1.0, 2.0, -2.0}))) << smoothed.reshape(-1);
}

TEST(Td3LossTest, CriticRegressesBothCriticsOntoTheClippedDoubleQTarget) {
  const at::Tensor q = T({1.0, 2.0, 0.0, 0.5}).reshape({2, 2}).requires_grad_(true);
  const at::Tensor next = T({3.0, 5.0, -1.0, 4.0}).reshape({2, 2});
  Td3Targets batch{T({1.0, 2.0}), T({0.5, 0.0}), T({1.0, 0.5})};
  const Td3CriticLossResult r = Td3CriticLoss(q, next, batch, {.priority_epsilon = 0.01});
  // y = 1 + 0.5 * min(3, 5) = 2.5 and 2 + 0 * ... = 2 (terminal).
  // Row 0: (2.5 - 1)^2 + (2.5 - 2)^2 = 2.5; row 1: ((2 - 0)^2 + (2 - 0.5)^2) * 0.5 = 3.125.
  EXPECT_NEAR(r.loss.item<double>(), (2.5 + 3.125) / 2, 1e-12);
  EXPECT_TRUE(at::allclose(r.td_error, T({1.5, 2.0})));
  EXPECT_TRUE(at::allclose(r.priorities, T({1.51, 2.01})));
  r.loss.backward();
  // d/dq of mean_i w_i sum_c (y - q_ic)^2 = -w_i (y - q_ic) (2 / B = 1).
  EXPECT_TRUE(at::allclose(q.grad(), T({-1.5, -0.5, -1.0, -0.75}).reshape({2, 2})));
}

TEST(Td3LossTest, ActorLossFollowsTheFirstCriticOnly) {
  const at::Tensor q = T({1.0, -7.0, 3.0, 9.0}).reshape({2, 2}).requires_grad_(true);
  const at::Tensor loss = Td3ActorLoss(q);
  EXPECT_DOUBLE_EQ(loss.item<double>(), -2.0);
  loss.backward();
  EXPECT_TRUE(at::allclose(q.grad(), T({-0.5, 0.0, -0.5, 0.0}).reshape({2, 2})));
}

TEST(Td3LossTest, BadShapesAndOptionsAreRejected) {
  const at::Tensor q = at::zeros({3, 2}, at::kDouble);
  Td3Targets batch{at::zeros({3}), at::zeros({3}), {}};
  EXPECT_THROW(Td3CriticLoss(at::zeros({3, 1}), q, batch, {}), InvalidArgument);
  EXPECT_THROW(Td3CriticLoss(q, at::zeros({4, 2}), batch, {}), InvalidArgument);
  EXPECT_THROW(Td3CriticLoss(q, q, {at::zeros({2}), at::zeros({3}), {}}, {}), InvalidArgument);
  EXPECT_THROW(SmoothTargetActions(at::zeros({3, 2}), at::zeros({3, 1}),
                                   {at::zeros({2}), at::ones({2})}, {}),
               InvalidArgument);
  EXPECT_THROW(Td3LossOptions{.policy_noise = -1}.Validate(), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::learner
