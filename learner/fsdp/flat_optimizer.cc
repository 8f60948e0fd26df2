#include "learner/fsdp/flat_optimizer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/errors.h"

namespace rlswarm::learner {

OptimizerKind ParseOptimizerKind(std::string_view name) {
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "rmsprop") return OptimizerKind::kRmsProp;
  throw InvalidArgument("unknown optimizer '" + std::string(name) + "' (adam, rmsprop)");
}

void OptimizerOptions::Validate() const {
  if (!(lr > 0)) throw InvalidArgument("optimizer: lr must be > 0");
  for (double b : {beta1, beta2, alpha}) {
    if (!(b >= 0 && b < 1)) throw InvalidArgument("optimizer: betas and alpha must be in [0, 1)");
  }
  if (!(eps >= 0)) throw InvalidArgument("optimizer: eps must be >= 0");
  if (!(max_grad_norm >= 0)) throw InvalidArgument("optimizer: max_grad_norm must be >= 0");
  if (centered && kind != OptimizerKind::kRmsProp) {
    throw InvalidArgument("optimizer: centered is for rmsprop");
  }
}

namespace {

// ||step_size * numerator / denom||^2, the update addcdiv_ applied, as a
// 0-dim double tensor on the parameters' device (no host synchronisation).
// Reuses `denom`, a temporary of the step, so it costs no allocation; the
// parameters were updated by addcdiv_ itself, so they keep torch::optim's
// rounding.
at::Tensor UpdateSquaredNorm(at::Tensor& denom, const at::Tensor& numerator, double step_size) {
  return denom.reciprocal_()
      .mul_(numerator)
      .norm()
      .to(at::kDouble)
      .pow(2)
      .mul(step_size * step_size);
}

}  // namespace

FlatOptimizer::FlatOptimizer(OptimizerOptions options, at::Tensor params, at::Tensor grads)
    : options_(options), params_(std::move(params)), grads_(std::move(grads)) {
  options_.Validate();
  if (params_.dim() != 1 || !grads_.sizes().equals(params_.sizes())) {
    throw InvalidArgument("FlatOptimizer: params and grads must be 1-D of the same size");
  }
  exp_avg_sq_ = at::zeros_like(params_);
  if (options_.kind == OptimizerKind::kAdam || options_.centered) {
    exp_avg_ = at::zeros_like(params_);
  }
}

at::Tensor FlatOptimizer::Step() {
  at::NoGradGuard no_grad;
  ++step_;
  // Element-wise, so chunk by chunk: the step's temporaries (denominators)
  // are one chunk, not a copy of the whole state — for a 50 M parameter
  // shard that is 4 MB instead of 200 MB on top of the state, and the
  // chunk's ops run on data still in cache. The parameters get the same
  // values as from one pass over the whole buffer.
  const int64_t n = params_.numel();
  at::Tensor update_sq = StepSlice(0, std::min(kStepChunk, n));
  for (int64_t offset = kStepChunk; offset < n; offset += kStepChunk) {
    update_sq.add_(StepSlice(offset, std::min(kStepChunk, n - offset)));
  }
  return update_sq;
}

at::Tensor FlatOptimizer::StepSlice(int64_t offset, int64_t len) {
  at::Tensor params = params_.narrow(0, offset, len);
  at::Tensor grads = grads_.narrow(0, offset, len);
  at::Tensor exp_avg_sq = exp_avg_sq_.narrow(0, offset, len);
  if (options_.kind == OptimizerKind::kAdam) {
    // torch::optim::Adam (Kingma & Ba 2015, Algorithm 1), same op order.
    at::Tensor exp_avg = exp_avg_.narrow(0, offset, len);
    const double bias_correction1 = 1 - std::pow(options_.beta1, static_cast<double>(step_));
    const double bias_correction2 = 1 - std::pow(options_.beta2, static_cast<double>(step_));
    exp_avg.mul_(options_.beta1).add_(grads, 1 - options_.beta1);
    exp_avg_sq.mul_(options_.beta2).addcmul_(grads, grads, 1 - options_.beta2);
    at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
    const double step_size = options_.lr / bias_correction1;
    params.addcdiv_(exp_avg, denom, -step_size);
    return UpdateSquaredNorm(denom, exp_avg, step_size);
  }
  // torch::optim::RMSprop without momentum (Tieleman & Hinton 2012), same
  // op order; centered, the square average less the squared mean gradient.
  exp_avg_sq.mul_(options_.alpha).addcmul_(grads, grads, 1 - options_.alpha);
  at::Tensor avg;
  if (options_.centered) {
    at::Tensor grad_avg = exp_avg_.narrow(0, offset, len);
    grad_avg.mul_(options_.alpha).add_(grads, 1 - options_.alpha);
    avg = exp_avg_sq.addcmul(grad_avg, grad_avg, -1).sqrt_().add_(options_.eps);
  } else {
    avg = exp_avg_sq.sqrt().add_(options_.eps);
  }
  params.addcdiv_(grads, avg, -options_.lr);
  return UpdateSquaredNorm(avg, grads, options_.lr);
}

models::NamedTensors FlatOptimizer::State() const {
  models::NamedTensors out;
  if (options_.kind == OptimizerKind::kAdam) {
    out.emplace_back("exp_avg", exp_avg_);
    out.emplace_back("exp_avg_sq", exp_avg_sq_);
  } else {
    out.emplace_back("square_avg", exp_avg_sq_);
    if (options_.centered) out.emplace_back("grad_avg", exp_avg_);
  }
  out.emplace_back("step", at::scalar_tensor(step_, at::kLong));
  return out;
}

void FlatOptimizer::LoadState(const models::NamedTensors& state) {
  std::map<std::string, at::Tensor> by_name(state.begin(), state.end());
  auto load = [&](const std::string& name, at::Tensor& into) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw InvalidArgument("optimizer state: missing '" + name + "'");
    if (it->second.numel() != into.numel()) {
      throw InvalidArgument("optimizer state: '" + name + "' has the wrong size");
    }
    into.copy_(it->second.reshape(-1));
  };
  at::NoGradGuard no_grad;
  if (options_.kind == OptimizerKind::kAdam) {
    load("exp_avg", exp_avg_);
    load("exp_avg_sq", exp_avg_sq_);
  } else {
    load("square_avg", exp_avg_sq_);
    if (options_.centered) load("grad_avg", exp_avg_);
  }
  auto it = by_name.find("step");
  if (it == by_name.end()) throw InvalidArgument("optimizer state: missing 'step'");
  step_ = it->second.item<int64_t>();
}

int64_t FlatOptimizer::StateBytes() const {
  int64_t bytes = exp_avg_sq_.numel() * exp_avg_sq_.element_size();
  if (exp_avg_.defined()) bytes += exp_avg_.numel() * exp_avg_.element_size();
  return bytes;
}

}  // namespace rlswarm::learner
