#pragma once

// A ModelSpec with its full parameters, for plain (unsharded) inference in
// actors and evaluation, and as the 1-process reference in learner tests.
// Each layer's parameters live in one contiguous flat tensor; Forward() runs
// the layers' functional forwards on views of those tensors.
//
// Not thread-safe: one QNetwork per thread (parameters are shared tensors,
// LoadParameters() writes them in place).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "models/model_spec.h"

namespace rlswarm::models {

class QNetwork {
 public:
  // Parameters initialised from `seed` (InitLayerFlat) and cast to `dtype`.
  QNetwork(ModelSpec spec, uint64_t seed, at::ScalarType dtype = at::kFloat);

  // obs: [B, sample_shape...] of any floating dtype (cast to the parameter
  // dtype) -> Q-values [B, num_actions]. Autograd-capable: set
  // RequiresGrad(true) to train the flat tensors directly.
  at::Tensor Forward(const at::Tensor& obs) const;

  // Copies parameters named as ParameterNames(spec()) into place. Throws
  // InvalidArgument on a missing name or a shape mismatch.
  void LoadParameters(const NamedTensors& named);
  NamedTensors NamedParameters() const;

  // One flat tensor per layer (leaf tensors; see RequiresGrad).
  const std::vector<at::Tensor>& LayerFlats() const { return flats_; }
  void RequiresGrad(bool requires_grad);

  const ModelSpec& spec() const { return spec_; }

 private:
  void MakeViews();

  ModelSpec spec_;
  std::vector<at::Tensor> flats_;
  std::vector<std::vector<at::Tensor>> views_;  // per layer, of flats_ (see MakeViews)
};

}  // namespace rlswarm::models
