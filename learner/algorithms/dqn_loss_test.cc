#include "learner/algorithms/dqn_loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

at::Tensor T(std::initializer_list<double> v) {
  return at::tensor(std::vector<double>(v), at::kDouble);
}

// Hand computation (B = 2, A = 2):
//   argmax_a Q_online(s')   = [1, 0]
//   Q_target(s', a*)        = [20, 30]
//   target = r + d * that   = [1 + 0.5 * 20, 0.5 + 0 * 30] = [11, 0.5]
//   Q(s, a)                 = [1, 4]   -> td = [10, -3.5]
//   huber(td)               = [9.5, 3]  (|td| - 0.5 beyond delta 1)
//   weighted by [0.5, 1]    = [4.75, 3] -> mean 3.875
//   dloss/dQ(s,a) = -w * clamp(td, -1, 1) / B = [-0.25, 0.5]
TEST(DqnLossTest, DoubleQTargetHuberAndIsWeightsMatchHandComputation) {
  at::Tensor q = T({1, 2, 3, 4}).view({2, 2}).requires_grad_(true);
  DqnTargets b;
  b.action = at::tensor(std::vector<int64_t>{0, 1});
  b.reward = T({1, 0.5}).to(at::kFloat);
  b.discount = T({0.5, 0}).to(at::kFloat);  // row 1 terminated
  b.weights = T({0.5, 1});
  DqnLossOptions o;
  o.priority_epsilon = 0.01;
  DqnLossResult r =
      DqnLoss(q, T({0, 5, 7, 1}).view({2, 2}), T({10, 20, 30, 40}).view({2, 2}), b, o);
  EXPECT_DOUBLE_EQ(r.loss.item<double>(), 3.875);
  EXPECT_TRUE(at::allclose(r.td_error, T({10, -3.5})));
  EXPECT_TRUE(at::allclose(r.priorities, T({10.01, 3.51})));
  r.loss.backward();
  EXPECT_TRUE(at::allclose(q.grad(), T({-0.25, 0, 0, 0.5}).view({2, 2})));
}

// Inside delta the loss is quadratic; without weights every item counts 1;
// plain DQN takes the target net's max instead of the online net's choice.
//   double Q: a* = 0, target = 0.1 + 0.9 * 0.2 = 0.28, loss = 0.5 * 0.28^2 = 0.0392
//   plain:    max = 5,  target = 0.1 + 0.9 * 5 = 4.6,   loss = 4.6 - 0.5 = 4.1
TEST(DqnLossTest, QuadraticInsideDeltaAndPlainDqnTakesTheTargetMax) {
  at::Tensor q = at::zeros({1, 2}, at::kDouble);
  DqnTargets b;
  b.action = at::tensor(std::vector<int64_t>{1});
  b.reward = T({0.1});
  b.discount = T({0.9});
  const at::Tensor next_online = T({1, 0}).view({1, 2});
  const at::Tensor next_target = T({0.2, 5}).view({1, 2});
  DqnLossOptions o;
  EXPECT_NEAR(DqnLoss(q, next_online, next_target, b, o).loss.item<double>(), 0.0392, 1e-12);
  o.double_q = false;
  EXPECT_NEAR(DqnLoss(q, next_online, next_target, b, o).loss.item<double>(), 4.1, 1e-12);
  o.huber_delta = 10;  // now 4.6 is inside delta: 0.5 * 4.6^2
  EXPECT_NEAR(DqnLoss(q, next_online, next_target, b, o).loss.item<double>(), 10.58, 1e-12);
}

TEST(DqnLossTest, MismatchedShapesAndBadOptionsAreRejected) {
  DqnTargets b;
  b.action = at::tensor(std::vector<int64_t>{0, 1, 1});
  b.reward = T({0, 0});
  b.discount = T({0, 0});
  const at::Tensor q = at::zeros({2, 2}, at::kDouble);
  EXPECT_THROW(DqnLoss(q, q, q, b, {}), InvalidArgument);
  DqnLossOptions o;
  o.huber_delta = 0;
  EXPECT_THROW(o.Validate(), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::learner
