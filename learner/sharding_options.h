#pragma once

// How a ShardedModel spreads parameters, gradients and optimizer state over
// the ranks (the FSDP / ZeRO-3 vocabulary), and in which dtypes it computes
// and communicates.

#include <c10/core/ScalarType.h>

#include <string>
#include <string_view>
#include <vector>

#include "learner/communicator.h"

namespace rlswarm::learner {

enum class ShardingStrategy {
  // Params, grads and optimizer state sharded; a unit's full params exist
  // only while its forward or backward runs (re-gathered before backward).
  kFullShard,
  // As kFullShard, but gathered params stay from a unit's forward until its
  // backward (ZeRO-2 like): one all-gather per unit per step instead of two.
  kShardGradOp,
  // Every rank holds everything; gradients are all-reduced (DDP like).
  kNoShard,
};

std::string_view ShardingStrategyName(ShardingStrategy strategy);
// "full_shard", "shard_grad_op", "no_shard"; throws InvalidArgument otherwise.
ShardingStrategy ParseShardingStrategy(std::string_view name);

std::string_view ReduceScatterImplName(ReduceScatterImpl impl);
// "auto", "alltoall", "allreduce", "native"; throws InvalidArgument otherwise.
ReduceScatterImpl ParseReduceScatterImpl(std::string_view name);

// The dtypes of the three copies of the parameters (as torch FSDP's
// MixedPrecision): the master shards the optimizer updates (fp32 with bf16
// compute on CUDA), the gathered parameters the forward computes with, and
// the gradients on the wire. On CPU, float64 or bf16 compute both run.
struct MixedPrecisionPolicy {
  at::ScalarType param_dtype = at::kFloat;
  at::ScalarType reduce_dtype = at::kFloat;
  at::ScalarType master_dtype = at::kFloat;

  static MixedPrecisionPolicy Uniform(at::ScalarType dtype) { return {dtype, dtype, dtype}; }
  // Throws InvalidArgument on a non-floating dtype.
  void Validate() const;
};

struct ShardingOptions {
  ShardingStrategy strategy = ShardingStrategy::kFullShard;
  // Wrapping: how many consecutive layers form each unit (each unit is one
  // flat buffer and one all-gather / reduce-scatter). Empty: one unit per
  // layer. {3} for a 3-layer model: the whole model is one unit.
  std::vector<int> layers_per_unit;
  // All-gathers issued ahead of the unit that needs them.
  int num_to_forward_prefetch = 1;
  int num_to_backward_prefetch = 1;
  // kAuto: the backend's own reduce-scatter where it has one (NCCL, Gloo in
  // LibTorch 2.x), else all-to-all plus a local sum.
  ReduceScatterImpl reduce_scatter = ReduceScatterImpl::kAuto;
  MixedPrecisionPolicy mixed_precision;
  // false skips the gradient reduction: each rank then steps on its local
  // gradient only. Wrong on purpose; only for the tests' negative control.
  bool reduce_gradients = true;

  // Throws InvalidArgument: negative prefetch, layers_per_unit entries <= 0
  // or not summing to num_layers, bad dtypes.
  void Validate(int num_layers) const;
};

}  // namespace rlswarm::learner
