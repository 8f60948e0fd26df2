#include "models/continuous_networks.h"

#include <ATen/ATen.h>

#include <string>

#include "common/errors.h"
#include "models/q_networks.h"

namespace rlswarm::models {
namespace {

void CheckSizes(const char* what, int64_t observation_dim, int64_t action_dim,
                const std::vector<int64_t>& hidden_sizes) {
  if (observation_dim <= 0 || action_dim <= 0) {
    throw InvalidArgument(std::string(what) + ": observation_dim and action_dim must be > 0");
  }
  for (int64_t h : hidden_sizes) {
    if (h <= 0) throw InvalidArgument(std::string(what) + ": hidden sizes must be > 0");
  }
}

// One bound per action dimension from a per-dimension or a single value.
std::vector<float> Broadcast(const std::vector<float>& bound, int64_t dim) {
  if (bound.size() == 1) return std::vector<float>(static_cast<size_t>(dim), bound[0]);
  return bound;
}

// Both critics' linear layers: weight [2, out, in], bias [2, out]. Input
// [B, in] (the first layer: the same state-action rows for both critics) or
// [2, B, in]; output [2, B, out].
LayerSpec TwinLinearLayer(std::string name, int64_t in, int64_t out, bool relu) {
  LayerSpec layer;
  layer.name = std::move(name);
  layer.params = {{"weight", {2, out, in}, in, ParamInit::kFanInUniform},
                  {"bias", {2, out}, in, ParamInit::kFanInUniform}};
  layer.forward = [relu](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    const at::Tensor input = x.dim() == 2 ? x.unsqueeze(0).expand({2, x.size(0), x.size(1)}) : x;
    at::Tensor y = at::baddbmm(p[1].unsqueeze(1), input, p[0].transpose(1, 2));
    return relu ? at::relu(y) : y;
  };
  return layer;
}

}  // namespace

void DeterministicPolicyOptions::Validate() const {
  CheckSizes("deterministic policy", observation_dim, action_dim, hidden_sizes);
  const auto dim = static_cast<size_t>(action_dim);
  if ((action_low.size() != 1 && action_low.size() != dim) ||
      (action_high.size() != 1 && action_high.size() != dim)) {
    throw InvalidArgument("deterministic policy: action bounds need 1 or " +
                          std::to_string(action_dim) + " values");
  }
  const std::vector<float> low = Broadcast(action_low, action_dim);
  const std::vector<float> high = Broadcast(action_high, action_dim);
  for (size_t i = 0; i < dim; ++i) {
    if (!(low[i] < high[i])) {
      throw InvalidArgument("deterministic policy: action bound " + std::to_string(i) +
                            " needs low < high (both finite)");
    }
  }
}

void TwinCriticOptions::Validate() const {
  CheckSizes("twin critic", observation_dim, action_dim, hidden_sizes);
}

ModelSpec MakeDeterministicPolicySpec(const DeterministicPolicyOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "deterministic_policy";
  spec.sample_shape = {options.observation_dim};
  spec.num_actions = options.action_dim;
  int64_t in = options.observation_dim;
  for (size_t i = 0; i < options.hidden_sizes.size(); ++i) {
    spec.layers.push_back(LinearLayer("fc" + std::to_string(i), in, options.hidden_sizes[i], true));
    in = options.hidden_sizes[i];
  }
  const std::vector<float> low = Broadcast(options.action_low, options.action_dim);
  const std::vector<float> high = Broadcast(options.action_high, options.action_dim);
  std::vector<float> mid(low.size()), half(low.size());
  for (size_t i = 0; i < low.size(); ++i) {
    mid[i] = 0.5f * (low[i] + high[i]);
    half[i] = 0.5f * (high[i] - low[i]);
  }
  LayerSpec action = LinearLayer("action", in, options.action_dim, false);
  action.forward = [mid, half](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    const at::Tensor z = at::linear(x, p[0], p[1]);
    const auto opts = at::TensorOptions().dtype(z.scalar_type()).device(z.device());
    const at::Tensor m = at::tensor(mid).to(opts);
    const at::Tensor h = at::tensor(half).to(opts);
    return m + h * at::tanh(z);
  };
  spec.layers.push_back(std::move(action));
  spec.Validate();
  return spec;
}

ModelSpec MakeTwinCriticSpec(const TwinCriticOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "twin_critic";
  spec.sample_shape = {options.observation_dim + options.action_dim};
  spec.num_actions = 2;
  int64_t in = options.observation_dim + options.action_dim;
  for (size_t i = 0; i < options.hidden_sizes.size(); ++i) {
    spec.layers.push_back(
        TwinLinearLayer("fc" + std::to_string(i), in, options.hidden_sizes[i], true));
    in = options.hidden_sizes[i];
  }
  LayerSpec q = TwinLinearLayer("q", in, 1, false);
  const LayerForward linear = q.forward;
  q.forward = [linear](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    return linear(x, p).squeeze(2).transpose(0, 1);  // [2, B, 1] -> [B, 2]
  };
  spec.layers.push_back(std::move(q));
  spec.Validate();
  return spec;
}

}  // namespace rlswarm::models
