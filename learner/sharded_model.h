#pragma once

// A Q-network trained on N ranks with parameters, gradients and optimizer
// state sharded 1/N per rank (FSDP / ZeRO-3), on a c10d ProcessGroup.
//
// Layers of the ModelSpec are grouped into units (ShardingOptions wrapping);
// each unit is one zero-padded flat buffer split evenly over ranks
// (shard_layout.h). A rank keeps only its shards, all in one flat local
// buffer (LocalShard()), with the gradient in a second one (LocalGrad()), so
// the optimizer and the target-network update are a few tensor ops on the
// whole rank's state. See gathered_units.h for the forward/backward data
// path and learner/README.md for the strategies and their costs.
//
// At world size 1, and for no_shard, the layers run directly on views of the
// local buffer (no copy, no collective), so a 1-rank model costs what plain
// LibTorch costs.
//
// Collective contract: Forward() (sharded strategies), backward through its
// output, Step(), FullParameters() are collectives: every rank must call them
// in the same order with the same models. A rank that died or stalls makes
// the others throw Unavailable or DeadlineExceeded within the group's
// timeout.
//
// Not thread-safe: one thread drives a ShardedModel. The model must outlive
// backward through any output it produced. Double backward is unsupported.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "learner/communicator.h"
#include "learner/flat_optimizer.h"
#include "learner/shard_layout.h"
#include "learner/sharding_options.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

struct ShardRuntime;

struct ShardedModelOptions {
  ShardingOptions sharding;
  OptimizerOptions optimizer;
  uint64_t seed = 0;  // models::InitParam, the same on every rank
  at::Device device = at::kCPU;
  // false: no gradients and no optimizer state (a target network).
  bool trainable = true;

  // Throws InvalidArgument (see the member options' Validate).
  void Validate(const models::ModelSpec& spec) const;
};

// Tensor bytes a rank holds between updates.
struct StateBytes {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t Total() const { return params + grads + optimizer; }
};

class ShardedModel {
 public:
  // Initialises every unit from options.seed and keeps this rank's shards.
  // Local: issues no collective.
  ShardedModel(models::ModelSpec spec, ShardedModelOptions options,
               std::shared_ptr<Communicator> comm);
  ~ShardedModel();
  ShardedModel(const ShardedModel&) = delete;
  ShardedModel& operator=(const ShardedModel&) = delete;

  // input [B, sample_shape...] -> Q-values [B, num_actions] in the param
  // dtype. Autograd-capable when grad mode is on and the model is trainable;
  // backward through the output reduce-scatters into LocalGrad(). Each
  // rank's loss should be the mean over its own share of the global batch.
  at::Tensor Forward(const at::Tensor& input);

  void ZeroGrad();
  // no_shard: all-reduces gradients; then clips by the global norm
  // (one all-reduce of a scalar when sharded) and steps the optimizer on the
  // local shard. Collective. Throws FailedPrecondition if not trainable.
  void Step();
  // Global gradient norm seen by the last Step() (before clipping); 0 if
  // clipping is off.
  double last_grad_norm() const { return last_grad_norm_; }

  // Gathers the full parameters, named as models::ParameterNames, in the
  // master dtype. Collective; every rank gets the full set.
  models::NamedTensors FullParameters();
  // Takes this rank's slices of full parameters (e.g. from an unsharded
  // checkpoint). Local. Throws InvalidArgument on missing names or shapes.
  void LoadFullParameters(const models::NamedTensors& named);

  // This rank's shards of all units, concatenated in unit order (master
  // dtype, padding included and zero), and their gradient. For checkpoints:
  // layouts() says where each parameter's slice is.
  at::Tensor LocalShard() const { return local_flat_; }
  // LocalGrad() first completes the gradient reductions still in flight.
  at::Tensor LocalGrad() const;
  const std::vector<UnitLayout>& layouts() const;
  // Throws FailedPrecondition if not trainable.
  FlatOptimizer& optimizer();

  // A non-trainable copy with the same layout (a sharded target network
  // when this model is sharded). Local.
  std::unique_ptr<ShardedModel> MakeTarget() const;
  // target <- online (hard copy) or target <- tau*online + (1-tau)*target
  // (Polyak). Local: both models have the same layout on every rank.
  void CopyFrom(const ShardedModel& online);
  void PolyakUpdate(const ShardedModel& online, double tau);

  StateBytes LocalStateBytes() const;
  // What 1-process training holds: params + grads + optimizer state in the
  // master dtype, no padding.
  StateBytes UnshardedStateBytes() const;
  // Most bytes of gathered (full) unit parameters held at once since
  // construction or ResetPeak(); the full-size gradient of the unit being
  // reduced comes on top (LargestUnitBytes()).
  int64_t PeakGatheredBytes() const;
  int64_t LargestUnitBytes() const;
  void ResetPeak();
  const CommStats& comm_stats() const { return comm_->stats(); }
  Communicator& communicator() { return *comm_; }

  const models::ModelSpec& spec() const { return spec_; }
  const ShardedModelOptions& options() const { return options_; }
  // True when layers run on the local buffer directly (world 1 or no_shard).
  bool direct() const { return direct_; }

 private:
  at::Tensor ForwardDirect(at::Tensor x);
  at::Tensor ForwardSharded(at::Tensor x);
  void AllReduceGradients();
  void ClipGradients();

  models::ModelSpec spec_;
  ShardedModelOptions options_;
  std::shared_ptr<Communicator> comm_;
  bool direct_ = false;
  std::shared_ptr<ShardRuntime> runtime_;
  at::Tensor local_flat_;  // master dtype, LocalNumel(layouts)
  at::Tensor local_grad_;
  // Direct path: one leaf per parameter, a view of local_flat_ whose .grad
  // is the matching view of local_grad_ (autograd accumulates in place).
  std::vector<std::vector<at::Tensor>> layer_params_;
  std::unique_ptr<FlatOptimizer> optimizer_;
  double last_grad_norm_ = 0;
};

}  // namespace rlswarm::learner
