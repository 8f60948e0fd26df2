#include "learner/fsdp/sharding_options.h"

#include <numeric>

#include "common/errors.h"
#include "learner/fsdp/shard_layout.h"

namespace rlswarm::learner {

std::string_view ShardingStrategyName(ShardingStrategy strategy) {
  switch (strategy) {
    case ShardingStrategy::kFullShard:
      return "full_shard";
    case ShardingStrategy::kShardGradOp:
      return "shard_grad_op";
    case ShardingStrategy::kNoShard:
      return "no_shard";
    case ShardingStrategy::kHybridShard:
      return "hybrid_shard";
  }
  return "?";
}

ShardingStrategy ParseShardingStrategy(std::string_view name) {
  if (name == "full_shard") return ShardingStrategy::kFullShard;
  if (name == "shard_grad_op") return ShardingStrategy::kShardGradOp;
  if (name == "no_shard") return ShardingStrategy::kNoShard;
  if (name == "hybrid_shard") return ShardingStrategy::kHybridShard;
  throw InvalidArgument("unknown sharding strategy '" + std::string(name) +
                        "' (full_shard, shard_grad_op, no_shard, hybrid_shard)");
}

std::string_view ReduceScatterImplName(ReduceScatterImpl impl) {
  switch (impl) {
    case ReduceScatterImpl::kAllToAll:
      return "alltoall";
    case ReduceScatterImpl::kAllReduce:
      return "allreduce";
    case ReduceScatterImpl::kNative:
      return "native";
    case ReduceScatterImpl::kAuto:
      return "auto";
  }
  return "?";
}

ReduceScatterImpl ParseReduceScatterImpl(std::string_view name) {
  if (name == "alltoall") return ReduceScatterImpl::kAllToAll;
  if (name == "allreduce") return ReduceScatterImpl::kAllReduce;
  if (name == "native") return ReduceScatterImpl::kNative;
  if (name == "auto") return ReduceScatterImpl::kAuto;
  throw InvalidArgument("unknown reduce-scatter '" + std::string(name) +
                        "' (auto, alltoall, allreduce, native)");
}

void MixedPrecisionPolicy::Validate() const {
  for (at::ScalarType t : {param_dtype, reduce_dtype, master_dtype}) {
    if (!at::isFloatingType(t)) {
      throw InvalidArgument(std::string("mixed precision: ") + c10::toString(t) +
                            " is not a floating dtype");
    }
  }
}

void ShardingOptions::Validate(int num_layers) const {
  if (num_to_forward_prefetch < 0 || num_to_backward_prefetch < 0) {
    throw InvalidArgument("sharding: prefetch counts must be >= 0");
  }
  if (!layers_per_unit.empty()) {
    for (int n : layers_per_unit) {
      if (n <= 0) throw InvalidArgument("sharding: layers_per_unit entries must be > 0");
    }
    const int total = std::accumulate(layers_per_unit.begin(), layers_per_unit.end(), 0);
    if (total != num_layers) {
      throw InvalidArgument("sharding: layers_per_unit sums to " + std::to_string(total) +
                            " but the model has " + std::to_string(num_layers) + " layers");
    }
  }
  if (wrap_min_params < 0) throw InvalidArgument("sharding: wrap_min_params must be >= 0");
  if (wrap_min_params > 0 && !layers_per_unit.empty()) {
    throw InvalidArgument(
        "sharding: layers_per_unit and wrap_min_params both choose the units; set one");
  }
  mixed_precision.Validate();
}

std::vector<int> ShardingOptions::LayersPerUnit(const models::ModelSpec& spec) const {
  if (wrap_min_params > 0) return WrapBySize(spec, wrap_min_params);
  return layers_per_unit;
}

}  // namespace rlswarm::learner
