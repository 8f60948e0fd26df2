#include "bench/plain_dqn_update.h"

#include <ATen/ATen.h>
// clip_grad.h uses torch::Tensor without including its header.
// clang-format off
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
// clang-format on
#include <torch/optim/adam.h>

#include "common/errors.h"
#include "config/experiment_config.h"

namespace rlswarm::bench {

PlainDqnOptions PlainDqnOptionsOf(const config::ExperimentConfig& config) {
  if (config.learner.optimizer != "adam") {
    throw InvalidArgument("the plain DQN update is Adam's; learner.optimizer is " +
                          config.learner.optimizer);
  }
  PlainDqnOptions o;
  o.lr = config.learner.lr;
  o.adam_eps = config.learner.optimizer_eps;
  o.max_grad_norm = config.learner.max_grad_norm;
  o.huber_delta = config.learner.huber_delta;
  o.double_q = config.learner.double_q;
  o.target_tau = config.learner.target_tau;
  o.target_update_interval = config.learner.target_update_interval;
  o.seed = config.model.seed;
  return o;
}

struct PlainDqn::Optimizer {
  torch::optim::Adam adam;
};

PlainDqn::PlainDqn(models::ModelSpec spec, PlainDqnOptions options, at::Device device)
    : spec_(std::move(spec)), options_(options), device_(device) {
  spec_.Validate();
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    online_.emplace_back();
    target_.emplace_back();
    for (size_t p = 0; p < spec_.layers[l].params.size(); ++p) {
      const at::Tensor init = models::InitParam(spec_, l, p, options_.seed).to(device, at::kFloat);
      online_.back().push_back(init.clone().requires_grad_(true));
      target_.back().push_back(init.clone());
    }
  }
  optimizer_ = std::make_unique<Optimizer>(Optimizer{torch::optim::Adam(
      Flat(online_), torch::optim::AdamOptions(options_.lr).eps(options_.adam_eps))});
}

std::vector<at::Tensor> PlainDqn::Flat(const Parameters& params) const {
  std::vector<at::Tensor> all;
  for (const std::vector<at::Tensor>& layer : params)
    all.insert(all.end(), layer.begin(), layer.end());
  return all;
}

at::Tensor PlainDqn::Forward(const Parameters& params, const at::Tensor& obs) const {
  at::Tensor x = obs.to(device_, at::kFloat);
  for (size_t l = 0; l < spec_.layers.size(); ++l) x = spec_.layers[l].forward(x, params[l]);
  return x;
}

models::NamedTensors PlainDqn::NamedParameters() const {
  models::NamedTensors named;
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    for (size_t p = 0; p < spec_.layers[l].params.size(); ++p) {
      named.emplace_back(spec_.layers[l].name + "." + spec_.layers[l].params[p].name,
                         online_[l][p].detach().cpu());
    }
  }
  return named;
}

PlainDqn::~PlainDqn() = default;

std::vector<double> PlainDqn::Update(const PlainDqnBatch& batch) {
  // The networks take float32; uint8 grids (MinAtar) are cast here, as the
  // learner casts its staged batch.
  const at::Device device = device_;
  const at::Tensor observation = batch.observation.to(device, at::kFloat);
  const at::Tensor next_observation = batch.next_observation.to(device, at::kFloat);
  const at::Tensor action = batch.action.to(device, at::kLong);
  const at::Tensor reward = batch.reward.to(device, at::kFloat);
  const at::Tensor discount = batch.discount.to(device, at::kFloat);
  at::Tensor target;
  {
    at::NoGradGuard no_grad;
    const at::Tensor next_target = Forward(target_, next_observation);
    at::Tensor bootstrap;
    if (options_.double_q) {
      const at::Tensor best = Forward(online_, next_observation).argmax(1, true);
      bootstrap = next_target.gather(1, best).squeeze(1);
    } else {
      bootstrap = std::get<0>(next_target.max(1));
    }
    target = reward + discount * bootstrap;
  }
  optimizer_->adam.zero_grad();
  const at::Tensor q = Forward(online_, observation).gather(1, action.unsqueeze(1));
  const at::Tensor chosen = q.squeeze(1);
  at::Tensor per_item = at::huber_loss(chosen, target, at::Reduction::None, options_.huber_delta);
  if (batch.weights.defined())
    per_item = per_item * batch.weights.to(device, per_item.scalar_type());
  const at::Tensor loss = per_item.mean();
  loss.backward();
  if (options_.max_grad_norm > 0) {
    torch::nn::utils::clip_grad_norm_(Flat(online_), options_.max_grad_norm);
  }
  optimizer_->adam.step();
  ++updates_;

  at::NoGradGuard no_grad;
  const std::vector<at::Tensor> online = Flat(online_);
  const std::vector<at::Tensor> target_params = Flat(target_);
  if (options_.target_tau > 0) {
    for (size_t i = 0; i < online.size(); ++i)
      target_params[i].lerp_(online[i], options_.target_tau);
  } else if (updates_ % options_.target_update_interval == 0) {
    for (size_t i = 0; i < online.size(); ++i) target_params[i].copy_(online[i]);
  }
  const at::Tensor priorities = (target - chosen.detach()).abs().to(at::kDouble).cpu();
  last_loss_ = loss.item<double>();
  const double* p = priorities.data_ptr<double>();
  return {p, p + priorities.numel()};
}

at::Tensor PlainDqn::GreedyActions(const at::Tensor& observation) const {
  at::NoGradGuard no_grad;
  return Forward(online_, observation).argmax(1);
}

}  // namespace rlswarm::bench
