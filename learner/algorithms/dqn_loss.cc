#include "learner/algorithms/dqn_loss.h"

#include <ATen/ATen.h>

#include <string>

#include "common/errors.h"

namespace rlswarm::learner {

void DqnLossOptions::Validate() const {
  if (!(huber_delta > 0)) throw InvalidArgument("DqnLossOptions: huber_delta must be > 0");
  if (!(priority_epsilon >= 0)) {
    throw InvalidArgument("DqnLossOptions: priority_epsilon must be >= 0");
  }
}

namespace {

void CheckRows(const at::Tensor& t, int64_t rows, const char* what) {
  if (!t.defined() || t.dim() != 1 || t.size(0) != rows) {
    throw InvalidArgument(std::string("DqnLoss: ") + what + " must have shape [" +
                          std::to_string(rows) + "]");
  }
}

}  // namespace

DqnLossResult DqnLoss(const at::Tensor& q, const at::Tensor& next_online,
                      const at::Tensor& next_target, const DqnTargets& batch,
                      const DqnLossOptions& options) {
  if (q.dim() != 2) throw InvalidArgument("DqnLoss: q must be [B, A]");
  const int64_t rows = q.size(0);
  if (next_online.sizes() != q.sizes() || next_target.sizes() != q.sizes()) {
    throw InvalidArgument("DqnLoss: next_online and next_target must have q's shape");
  }
  CheckRows(batch.action, rows, "action");
  CheckRows(batch.reward, rows, "reward");
  CheckRows(batch.discount, rows, "discount");
  if (batch.weights.defined()) CheckRows(batch.weights, rows, "weights");
  const auto dtype = q.scalar_type();

  at::Tensor target;
  {
    at::NoGradGuard no_grad;
    at::Tensor bootstrap;
    if (options.double_q) {
      // Double Q-learning: the online net picks the action, the target net
      // values it, which removes max's upward bias.
      at::Tensor best = next_online.argmax(1, /*keepdim=*/true);
      bootstrap = next_target.gather(1, best).squeeze(1);
    } else {
      bootstrap = std::get<0>(next_target.max(1));
    }
    target = batch.reward.to(dtype) + batch.discount.to(dtype) * bootstrap.to(dtype);
  }
  at::Tensor chosen = q.gather(1, batch.action.to(at::kLong).unsqueeze(1)).squeeze(1);
  // Huber: quadratic within delta, linear beyond, so one outlier's gradient
  // is bounded by delta (Ape-X, appendix: "Huber loss"). ATen's fused kernel
  // is one autograd node where the formula written out is six: on the small
  // networks of RL the per-op cost is most of an update.
  DqnLossResult out;
  if (batch.weights.defined()) {
    out.loss = (at::huber_loss(chosen, target, at::Reduction::None, options.huber_delta) *
                batch.weights.to(dtype))
                   .mean();
  } else {
    out.loss = at::huber_loss(chosen, target, at::Reduction::Mean, options.huber_delta);
  }
  out.td_error = target - chosen.detach();
  out.priorities = out.td_error.abs().to(at::kDouble) + options.priority_epsilon;
  return out;
}

}  // namespace rlswarm::learner
