#include "models/model_spec.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <set>

#include "common/errors.h"
#include "common/random.h"

namespace rlswarm::models {

int64_t ParamSpec::Numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t LayerSpec::Numel() const {
  int64_t n = 0;
  for (const ParamSpec& p : params) n += p.Numel();
  return n;
}

int64_t ModelSpec::Numel() const {
  int64_t n = 0;
  for (const LayerSpec& l : layers) n += l.Numel();
  return n;
}

void ModelSpec::Validate() const {
  if (layers.empty()) throw InvalidArgument("model '" + name + "' has no layers");
  if (num_actions <= 0) throw InvalidArgument("model '" + name + "': num_actions must be > 0");
  std::set<std::string> seen;
  for (const LayerSpec& l : layers) {
    if (!seen.insert(l.name).second) {
      throw InvalidArgument("model '" + name + "': duplicate layer name '" + l.name + "'");
    }
    if (!l.forward) throw InvalidArgument("layer '" + l.name + "' has no forward");
    for (const ParamSpec& p : l.params) {
      for (int64_t d : p.shape) {
        if (d <= 0)
          throw InvalidArgument("parameter '" + l.name + "." + p.name + "' has a dim <= 0");
      }
      if (p.fan_in <= 0)
        throw InvalidArgument("parameter '" + l.name + "." + p.name + "': fan_in <= 0");
    }
  }
}

std::vector<at::Tensor> ParamViews(const LayerSpec& layer, const at::Tensor& flat) {
  // One split rather than a narrow per parameter: autograd's backward of a
  // split concatenates the parameters' gradients into one flat gradient,
  // where a narrow per parameter zero-fills a full-size tensor for each of
  // them and sums those (the sharded learner's gathered units backprop
  // through these views).
  std::vector<int64_t> sizes;
  sizes.reserve(layer.params.size() + 1);
  int64_t total = 0;
  for (const ParamSpec& p : layer.params) {
    sizes.push_back(p.Numel());
    total += p.Numel();
  }
  if (total < flat.numel()) sizes.push_back(flat.numel() - total);  // the tail, unused
  std::vector<at::Tensor> parts = at::split_with_sizes(flat, sizes);
  std::vector<at::Tensor> views;
  views.reserve(layer.params.size());
  for (size_t i = 0; i < layer.params.size(); ++i) {
    views.push_back(parts[i].view(layer.params[i].shape));
  }
  return views;
}

at::Tensor InitParam(const ModelSpec& spec, size_t layer, size_t param, uint64_t seed) {
  const ParamSpec& p = spec.layers.at(layer).params.at(param);
  at::Tensor t = at::zeros(p.shape, at::kDouble);
  if (p.init == ParamInit::kZeros) return t;
  if (p.init == ParamInit::kOnes) return t.fill_(1.0);
  // A splitmix-style mix so that neighbouring (layer, param) pairs get
  // unrelated streams.
  const uint64_t s =
      SplitMix64Finalize(seed ^ (0x9E3779B97F4A7C15ULL * (layer * 1024 + param + 1)));
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(s);
  const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
  t.uniform_(-bound, bound, gen);
  return t;
}

at::Tensor InitLayerFlat(const ModelSpec& spec, size_t layer, uint64_t seed) {
  const LayerSpec& l = spec.layers.at(layer);
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < l.params.size(); ++i)
    parts.push_back(InitParam(spec, layer, i, seed).reshape(-1));
  if (parts.empty()) return at::zeros({0}, at::kDouble);
  return at::cat(parts);
}

NamedTensors InitNamedParameters(const ModelSpec& spec, uint64_t seed) {
  NamedTensors out;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    for (size_t i = 0; i < spec.layers[l].params.size(); ++i) {
      out.emplace_back(spec.layers[l].name + "." + spec.layers[l].params[i].name,
                       InitParam(spec, l, i, seed));
    }
  }
  return out;
}

std::vector<std::string> ParameterNames(const ModelSpec& spec) {
  std::vector<std::string> names;
  for (const LayerSpec& l : spec.layers) {
    for (const ParamSpec& p : l.params) names.push_back(l.name + "." + p.name);
  }
  return names;
}

}  // namespace rlswarm::models
