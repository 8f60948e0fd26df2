#pragma once

// How a ShardedModel spreads parameters, gradients and optimizer state over
// the ranks (the FSDP / ZeRO-3 vocabulary), and in which dtypes it computes
// and communicates.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "learner/dist/communicator.h"
#include "models/model_spec.h"

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
  // FSDP's HYBRID_SHARD on a 2-D mesh (shard_mesh.h): kFullShard within each
  // shard group of G consecutive ranks, replicated across the W / G groups;
  // a unit's reduce-scattered gradient is then all-reduced over the replica
  // group. On a 1-D mesh (one group of every rank) it is kFullShard.
  kHybridShard,
};

// Whether a unit's gathered parameters are freed after its forward and
// gathered again for its backward (full_shard and hybrid_shard).
inline bool ReshardsAfterForward(ShardingStrategy strategy) {
  return strategy == ShardingStrategy::kFullShard || strategy == ShardingStrategy::kHybridShard;
}

std::string_view ShardingStrategyName(ShardingStrategy strategy);
// "full_shard", "shard_grad_op", "no_shard", "hybrid_shard"; throws
// InvalidArgument otherwise.
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
  // Wrapping by size (torch FSDP's size_based_auto_wrap_policy): > 0 forms
  // units greedily from consecutive layers until each holds >= this many
  // parameters (WrapBySize in shard_layout.h: the embedding joins the first
  // unit, a tail under the threshold the last one). 0 = off. Exclusive with
  // layers_per_unit.
  int64_t wrap_min_params = 0;
  // All-gathers issued ahead of the unit that needs them (FSDP2's
  // num_to_forward_prefetch / num_to_backward_prefetch). Two by default, so
  // that a unit's all-gather has two units' compute to hide behind; each unit
  // prefetched holds one more unit's gathered parameters (bench/README.md,
  // learner_bench, measures time and peak memory per depth). Only when an
  // all-gather is issued changes; results are bit-identical at any depth.
  int num_to_forward_prefetch = 2;
  int num_to_backward_prefetch = 2;
  // Activation checkpointing per unit (learner.activation_checkpointing):
  // each unit's forward keeps only its input, and its backward recomputes
  // the unit's forward (re-gathering its parameters under full_shard, as
  // backward does anyway) before backpropagating through it. One more
  // forward per update for one unit's activations at a time instead of all
  // (activation_checkpoint.h). Results are the same to float rounding.
  bool activation_checkpointing = false;
  // kAuto: the backend's own reduce-scatter where it has one (NCCL, Gloo in
  // LibTorch 2.x), else all-to-all plus a local sum.
  ReduceScatterImpl reduce_scatter = ReduceScatterImpl::kAuto;
  MixedPrecisionPolicy mixed_precision;
  // false skips the gradient reduction: each rank then steps on its local
  // gradient only. Wrong on purpose; only for the tests' negative control.
  bool reduce_gradients = true;

  // Throws InvalidArgument: negative prefetch, layers_per_unit entries <= 0
  // or not summing to num_layers, a negative wrap_min_params or one set
  // together with layers_per_unit, bad dtypes.
  void Validate(int num_layers) const;

  // Consecutive layers per unit for `spec`, as MakeUnitLayouts takes them:
  // layers_per_unit, or WrapBySize(spec, wrap_min_params), or empty (one
  // unit per layer).
  std::vector<int> LayersPerUnit(const models::ModelSpec& spec) const;
};

}  // namespace rlswarm::learner
