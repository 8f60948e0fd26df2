#pragma once

// A Q-network described as data: an ordered list of layers, each listing its
// parameters (name, shape, init) and a functional forward that takes the input
// and views of those parameters. The same description serves two users:
//  - actors and evaluation run it with full parameters (QNetwork);
//  - the learner groups consecutive layers into sharding units, keeps only a
//    flat shard of each unit, and calls a layer's forward on views of a
//    gathered flat buffer (learner::ShardedModel).
// A layer's parameters, flattened in the listed order, form one contiguous
// block; ParamViews() turns such a block back into shaped views (no copy).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rlswarm::models {

// Ordered (name, tensor) pairs, e.g. {"fc0.weight", [64, 4]}. Ordered so that
// every rank and every process walks parameters the same way.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

enum class ParamInit {
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): what torch.nn.Linear and Conv2d
  // produce by default (kaiming_uniform with a = sqrt(5) for weights, and the
  // same bound for biases), so a plain torch::nn baseline starts alike.
  kFanInUniform,
  kZeros,
  // 1: LayerNorm's gain, as torch.nn.LayerNorm starts it (its bias: kZeros).
  kOnes,
};

struct ParamSpec {
  std::string name;  // within its layer: "weight", "bias"
  std::vector<int64_t> shape;
  int64_t fan_in = 1;
  ParamInit init = ParamInit::kFanInUniform;

  int64_t Numel() const;
};

// forward(input, params) -> output; params are views in ParamSpec order.
using LayerForward =
    std::function<at::Tensor(const at::Tensor& input, const std::vector<at::Tensor>& params)>;

struct LayerSpec {
  std::string name;  // "fc0", "conv", "head"
  std::vector<ParamSpec> params;
  LayerForward forward;

  int64_t Numel() const;
};

struct ModelSpec {
  std::string name;                   // "mlp", "minatar"
  std::vector<int64_t> sample_shape;  // one observation: {4} or {C, 10, 10}
  int64_t num_actions = 0;
  std::vector<LayerSpec> layers;

  int64_t Numel() const;
  // Throws InvalidArgument for an empty model, a layer without forward, a
  // non-positive dimension or duplicate layer names.
  void Validate() const;
};

// Shaped views of one layer's parameters inside `flat` (at least
// layer.Numel() elements, 1-D, contiguous). The views alias `flat`, so
// autograd routes their gradients into it.
std::vector<at::Tensor> ParamViews(const LayerSpec& layer, const at::Tensor& flat);

// The deterministic initial value of parameter `param` of layer `layer`:
// drawn in float64 from a generator seeded by (seed, layer, param), so it does
// not depend on how layers are grouped into units, on the world size or on
// the dtype the caller casts it to.
at::Tensor InitParam(const ModelSpec& spec, size_t layer, size_t param, uint64_t seed);

// One layer's initial parameters flattened in order (float64).
at::Tensor InitLayerFlat(const ModelSpec& spec, size_t layer, uint64_t seed);

// All initial parameters, named "<layer>.<param>" (float64).
NamedTensors InitNamedParameters(const ModelSpec& spec, uint64_t seed);

// "<layer>.<param>" for every parameter, in order.
std::vector<std::string> ParameterNames(const ModelSpec& spec);

}  // namespace rlswarm::models
