#include "learner/flat_optimizer.h"

#include <ATen/ATen.h>

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
}

FlatOptimizer::FlatOptimizer(OptimizerOptions options, at::Tensor params, at::Tensor grads)
    : options_(options), params_(std::move(params)), grads_(std::move(grads)) {
  options_.Validate();
  if (params_.dim() != 1 || !grads_.sizes().equals(params_.sizes())) {
    throw InvalidArgument("FlatOptimizer: params and grads must be 1-D of the same size");
  }
  exp_avg_sq_ = at::zeros_like(params_);
  if (options_.kind == OptimizerKind::kAdam) exp_avg_ = at::zeros_like(params_);
}

void FlatOptimizer::Step() {
  at::NoGradGuard no_grad;
  ++step_;
  if (options_.kind == OptimizerKind::kAdam) {
    // torch::optim::Adam (Kingma & Ba 2015, Algorithm 1), same op order.
    const double bias_correction1 = 1 - std::pow(options_.beta1, static_cast<double>(step_));
    const double bias_correction2 = 1 - std::pow(options_.beta2, static_cast<double>(step_));
    exp_avg_.mul_(options_.beta1).add_(grads_, 1 - options_.beta1);
    exp_avg_sq_.mul_(options_.beta2).addcmul_(grads_, grads_, 1 - options_.beta2);
    at::Tensor denom = (exp_avg_sq_.sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
    params_.addcdiv_(exp_avg_, denom, -options_.lr / bias_correction1);
    return;
  }
  // torch::optim::RMSprop without momentum or centering (Tieleman & Hinton 2012).
  exp_avg_sq_.mul_(options_.alpha).addcmul_(grads_, grads_, 1 - options_.alpha);
  at::Tensor avg = exp_avg_sq_.sqrt().add_(options_.eps);
  params_.addcdiv_(grads_, avg, -options_.lr);
}

models::NamedTensors FlatOptimizer::State() const {
  models::NamedTensors out;
  if (options_.kind == OptimizerKind::kAdam) {
    out.emplace_back("exp_avg", exp_avg_);
    out.emplace_back("exp_avg_sq", exp_avg_sq_);
  } else {
    out.emplace_back("square_avg", exp_avg_sq_);
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
