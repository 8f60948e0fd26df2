#include "learner/algorithms/td3_loss.h"

#include <ATen/ATen.h>

#include <string>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

void CheckTwin(const at::Tensor& t, const char* name, int64_t rows) {
  if (t.dim() != 2 || t.size(1) != 2 || (rows >= 0 && t.size(0) != rows)) {
    throw InvalidArgument(std::string("td3 loss: ") + name + " must be [B, 2]");
  }
}

at::Tensor Column(const at::Tensor& t, const char* name, int64_t rows, const at::Tensor& like) {
  if (t.numel() != rows) {
    throw InvalidArgument(std::string("td3 loss: ") + name + " needs " + std::to_string(rows) +
                          " values, has " + std::to_string(t.numel()));
  }
  return t.reshape(-1).to(like.scalar_type());
}

}  // namespace

void Td3LossOptions::Validate() const {
  if (!(policy_noise >= 0)) throw InvalidArgument("td3: policy_noise must be >= 0");
  if (!(noise_clip >= 0)) throw InvalidArgument("td3: noise_clip must be >= 0");
  if (!(priority_epsilon >= 0)) throw InvalidArgument("td3: priority_epsilon must be >= 0");
}

at::Tensor SmoothTargetActions(const at::Tensor& target_actions, const at::Tensor& standard_noise,
                               const ActionBounds& bounds, const Td3LossOptions& options) {
  if (!standard_noise.sizes().equals(target_actions.sizes())) {
    throw InvalidArgument("td3 loss: noise and target actions differ in shape");
  }
  const at::Tensor low = bounds.low.to(target_actions.options()).reshape({1, -1});
  const at::Tensor high = bounds.high.to(target_actions.options()).reshape({1, -1});
  if (low.size(1) != target_actions.size(1) || high.size(1) != target_actions.size(1)) {
    throw InvalidArgument("td3 loss: action bounds and actions differ in width");
  }
  const at::Tensor half = 0.5 * (high - low);
  const at::Tensor noise =
      at::max(at::min(standard_noise.to(target_actions.scalar_type()) * options.policy_noise * half,
                      options.noise_clip * half),
              -options.noise_clip * half);
  return at::max(at::min(target_actions + noise, high), low);
}

Td3CriticLossResult Td3CriticLoss(const at::Tensor& q, const at::Tensor& next_target_q,
                                  const Td3Targets& batch, const Td3LossOptions& options) {
  CheckTwin(q, "q", -1);
  const int64_t rows = q.size(0);
  CheckTwin(next_target_q, "next_target_q", rows);
  at::Tensor y;
  {
    at::NoGradGuard no_grad;
    const at::Tensor reward = Column(batch.reward, "reward", rows, q);
    const at::Tensor discount = Column(batch.discount, "discount", rows, q);
    y = reward + discount * std::get<0>(next_target_q.detach().to(q.scalar_type()).min(1));
  }
  const at::Tensor td = y.unsqueeze(1) - q;  // [B, 2]
  at::Tensor per_item = td.pow(2).sum(1);
  if (batch.weights.defined()) per_item = per_item * Column(batch.weights, "weights", rows, q);
  Td3CriticLossResult result;
  result.loss = per_item.mean();
  result.td_error = td.select(1, 0).detach();
  result.priorities = result.td_error.abs().to(at::kDouble) + options.priority_epsilon;
  return result;
}

at::Tensor Td3ActorLoss(const at::Tensor& q_of_policy) {
  CheckTwin(q_of_policy, "q_of_policy", -1);
  return -q_of_policy.select(1, 0).mean();
}

}  // namespace rlswarm::learner
