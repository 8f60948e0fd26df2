#pragma once

// Adam and RMSprop over one flat parameter tensor and its flat gradient: a
// handful of tensor ops per step whatever the number of parameters
// (docs/baselines.md measured ~35% less time per update than
// torch::optim::Adam's loop over parameters). The update is element-wise, so
// stepping a rank's shard is exactly stepping those elements of the full
// model. Formulas follow torch::optim (LibTorch 1.13) step for step, so the
// plain LibTorch baseline and the tests' reference agree to rounding.
//
// Not thread-safe. Gradient clipping needs the global norm across ranks and
// lives in ShardedModel::Step().

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string_view>

#include "models/model_spec.h"

namespace rlswarm::learner {

enum class OptimizerKind { kAdam, kRmsProp };

// "adam", "rmsprop"; throws InvalidArgument otherwise.
OptimizerKind ParseOptimizerKind(std::string_view name);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdam;
  double lr = 1e-3;
  double beta1 = 0.9;    // Adam
  double beta2 = 0.999;  // Adam
  double alpha = 0.99;   // RMSprop smoothing
  double eps = 1e-8;
  // RMSprop: divide by the gradient's running standard deviation instead of
  // its running root mean square (Graves 2013, eq. 38-40; the form the
  // DQN papers and MinAtar's reference DQN use). Keeps a running mean of
  // the gradient besides the square average.
  bool centered = false;
  // Clip the gradient to this global L2 norm (over all ranks' shards), as
  // torch::nn::utils::clip_grad_norm_; 0 disables.
  double max_grad_norm = 0;

  // Throws InvalidArgument on lr <= 0, betas/alpha outside [0, 1), eps < 0,
  // max_grad_norm < 0, centered with adam.
  void Validate() const;
};

class FlatOptimizer {
 public:
  // `params` and `grads`: 1-D tensors of the same size and dtype; the
  // optimizer updates `params` in place from `grads` and keeps its state in
  // tensors of the same size.
  FlatOptimizer(OptimizerOptions options, at::Tensor params, at::Tensor grads);

  // One update (under no-grad). Returns the squared L2 norm of the update
  // it applied to `params` (0-dim, double, on their device; padding
  // contributes 0 when eps > 0), for the update-to-weight ratio.
  at::Tensor Step();

  int64_t step() const { return step_; }
  // "exp_avg", "exp_avg_sq" (Adam) or "square_avg" (RMSprop; centered also
  // "grad_avg"), each the size of the flat shard, plus "step" (int64
  // scalar). For checkpoints.
  models::NamedTensors State() const;
  // Throws InvalidArgument on a missing name or a size mismatch.
  void LoadState(const models::NamedTensors& state);
  int64_t StateBytes() const;
  // Bytes of state per parameter element, relative to the parameter dtype.
  static int StateTensorsPerParam(const OptimizerOptions& options) {
    return options.kind == OptimizerKind::kAdam || options.centered ? 2 : 1;
  }

  const OptimizerOptions& options() const { return options_; }

 private:
  // Elements per chunk of Step() (1 M: 4 MB of float temporaries).
  static constexpr int64_t kStepChunk = int64_t{1} << 20;
  // One update of elements [offset, offset + len); returns its update's
  // squared norm.
  at::Tensor StepSlice(int64_t offset, int64_t len);

  OptimizerOptions options_;
  at::Tensor params_;
  at::Tensor grads_;
  at::Tensor exp_avg_;     // Adam first moment / centered RMSprop gradient average
  at::Tensor exp_avg_sq_;  // Adam second moment / RMSprop square average
  int64_t step_ = 0;
};

}  // namespace rlswarm::learner
