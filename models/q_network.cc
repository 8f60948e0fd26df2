#include "models/q_network.h"

#include <ATen/ATen.h>

#include <map>

#include "common/errors.h"

namespace rlswarm::models {

QNetwork::QNetwork(ModelSpec spec, uint64_t seed, at::ScalarType dtype) : spec_(std::move(spec)) {
  spec_.Validate();
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    flats_.push_back(InitLayerFlat(spec_, l, seed).to(dtype));
  }
  MakeViews();
}

// Shaped views of the flat tensors, made once: making them costs a narrow
// and a view per parameter through the dispatcher, which was more than a
// quarter of a small MLP's forward pass (actor_bench). The views stay valid:
// LoadParameters writes into the flats in place.
void QNetwork::MakeViews() {
  views_.clear();
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    views_.push_back(ParamViews(spec_.layers[l], flats_[l]));
  }
}

at::Tensor QNetwork::Forward(const at::Tensor& obs) const {
  if (obs.dim() != static_cast<int64_t>(spec_.sample_shape.size()) + 1) {
    throw InvalidArgument("QNetwork::Forward: expected [B, sample...] with " +
                          std::to_string(spec_.sample_shape.size() + 1) + " dims");
  }
  at::Tensor x = obs.to(flats_.front().scalar_type());
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    x = spec_.layers[l].forward(x, views_[l]);
  }
  return x;
}

void QNetwork::LoadParameters(const NamedTensors& named) {
  std::map<std::string, at::Tensor> by_name(named.begin(), named.end());
  at::NoGradGuard no_grad;
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    std::vector<at::Tensor> views = ParamViews(spec_.layers[l], flats_[l]);
    for (size_t i = 0; i < views.size(); ++i) {
      const std::string name = spec_.layers[l].name + "." + spec_.layers[l].params[i].name;
      auto it = by_name.find(name);
      if (it == by_name.end()) throw InvalidArgument("LoadParameters: missing '" + name + "'");
      if (it->second.sizes() != views[i].sizes()) {
        throw InvalidArgument("LoadParameters: shape mismatch for '" + name + "'");
      }
      views[i].copy_(it->second);
    }
  }
}

NamedTensors QNetwork::NamedParameters() const {
  NamedTensors out;
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    std::vector<at::Tensor> views = ParamViews(spec_.layers[l], flats_[l].detach());
    for (size_t i = 0; i < views.size(); ++i) {
      out.emplace_back(spec_.layers[l].name + "." + spec_.layers[l].params[i].name, views[i]);
    }
  }
  return out;
}

void QNetwork::RequiresGrad(bool requires_grad) {
  for (at::Tensor& f : flats_) f.requires_grad_(requires_grad);
  MakeViews();  // views made before autograd was on would not carry it
}

}  // namespace rlswarm::models
