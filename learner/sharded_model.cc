#include "learner/sharded_model.h"

#include <ATen/ATen.h>

#include <cmath>
#include <map>

#include "common/errors.h"
#include "learner/gathered_units.h"

namespace rlswarm::learner {

void ShardedModelOptions::Validate(const models::ModelSpec& spec) const {
  spec.Validate();
  sharding.Validate(static_cast<int>(spec.layers.size()));
  optimizer.Validate();
}

ShardedModel::ShardedModel(models::ModelSpec spec, ShardedModelOptions options,
                           std::shared_ptr<Communicator> comm)
    : spec_(std::move(spec)), options_(std::move(options)), comm_(std::move(comm)) {
  if (!comm_) comm_ = std::make_shared<Communicator>();
  options_.Validate(spec_);
  const int world = comm_->world_size();
  const ShardingStrategy strategy = options_.sharding.strategy;
  // A 1-rank group (NCCL on one GPU) runs the sharded path through it, so
  // the GPU code path runs on a one-GPU node too.
  direct_ = (world == 1 && !comm_->has_group()) || strategy == ShardingStrategy::kNoShard;
  const int shard_count = direct_ ? 1 : world;
  const int rank = direct_ ? 0 : comm_->rank();

  runtime_ = std::make_shared<ShardRuntime>();
  runtime_->comm = comm_;
  runtime_->sharding = options_.sharding;
  runtime_->units = MakeUnitLayouts(spec_, options_.sharding.layers_per_unit, shard_count);

  const at::ScalarType master = options_.sharding.mixed_precision.master_dtype;
  const at::TensorOptions topts = at::TensorOptions().dtype(master).device(options_.device);
  local_flat_ = at::zeros({LocalNumel(runtime_->units)}, topts);
  if (options_.trainable) local_grad_ = at::zeros_like(local_flat_);

  // Initialise: every rank builds each unit's full flat buffer from the seed
  // (cheap next to training) and keeps its slice.
  for (const UnitLayout& u : runtime_->units) {
    std::vector<at::Tensor> parts;
    for (size_t l = u.first_layer; l < u.first_layer + u.num_layers; ++l) {
      parts.push_back(models::InitLayerFlat(spec_, l, options_.seed));
    }
    at::Tensor full = at::zeros({u.padded_numel}, at::kDouble);
    full.narrow(0, 0, u.numel).copy_(at::cat(parts));
    local_flat_.narrow(0, u.local_offset, u.shard_numel)
        .copy_(full.narrow(0, rank * u.shard_numel, u.shard_numel));
  }

  if (direct_) {
    for (const UnitLayout& u : runtime_->units) {
      for (size_t i = 0; i < u.num_layers; ++i) {
        const models::LayerSpec& layer = spec_.layers[u.first_layer + i];
        const int64_t at_offset = u.local_offset + u.layer_offsets[i];
        std::vector<at::Tensor> params =
            models::ParamViews(layer, local_flat_.narrow(0, at_offset, layer.Numel()));
        std::vector<at::Tensor> grads;
        if (options_.trainable) {
          grads = models::ParamViews(layer, local_grad_.narrow(0, at_offset, layer.Numel()));
        }
        for (size_t p = 0; p < params.size(); ++p) {
          params[p] = params[p].detach().requires_grad_(options_.trainable);
          if (options_.trainable) params[p].mutable_grad() = grads[p];
        }
        layer_params_.push_back(std::move(params));
      }
    }
  }
  for (const UnitLayout& u : runtime_->units) {
    at::Tensor shard = local_flat_.narrow(0, u.local_offset, u.shard_numel).detach();
    if (options_.trainable && !direct_) {
      shard.requires_grad_(true);
      shard.mutable_grad() = local_grad_.narrow(0, u.local_offset, u.shard_numel);
    }
    runtime_->shards.push_back(shard);
  }
  if (options_.trainable) {
    optimizer_ = std::make_unique<FlatOptimizer>(options_.optimizer, local_flat_, local_grad_);
  }
}

ShardedModel::~ShardedModel() = default;

const std::vector<UnitLayout>& ShardedModel::layouts() const { return runtime_->units; }

at::Tensor ShardedModel::Forward(const at::Tensor& input) {
  const int64_t dims = static_cast<int64_t>(spec_.sample_shape.size()) + 1;
  if (input.dim() != dims) {
    throw InvalidArgument("ShardedModel::Forward: expected " + std::to_string(dims) +
                          " dims [B, sample...], got " + std::to_string(input.dim()));
  }
  at::Tensor x = input.to(options_.device, options_.sharding.mixed_precision.param_dtype);
  return direct_ ? ForwardDirect(std::move(x)) : ForwardSharded(std::move(x));
}

at::Tensor ShardedModel::ForwardDirect(at::Tensor x) {
  const at::ScalarType compute = options_.sharding.mixed_precision.param_dtype;
  const bool cast = compute != options_.sharding.mixed_precision.master_dtype;
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    if (!cast) {
      x = spec_.layers[l].forward(x, layer_params_[l]);
      continue;
    }
    std::vector<at::Tensor> params;
    for (const at::Tensor& p : layer_params_[l]) params.push_back(p.to(compute));
    x = spec_.layers[l].forward(x, params);
  }
  return x;
}

at::Tensor ShardedModel::ForwardSharded(at::Tensor x) {
  const std::vector<UnitLayout>& units = runtime_->units;
  const bool with_autograd = options_.trainable && at::GradMode::is_enabled();
  const bool reshard = options_.sharding.strategy == ShardingStrategy::kFullShard;
  auto gathered = std::make_shared<GatheredUnits>(runtime_);
  for (size_t u = 0; u < units.size(); ++u) {
    gathered->Issue(u);
    for (int j = 1; j <= options_.sharding.num_to_forward_prefetch; ++j) gathered->Issue(u + j);
    at::Tensor full = gathered->Acquire(u, with_autograd);
    const UnitLayout& unit = units[u];
    for (size_t i = 0; i < unit.num_layers; ++i) {
      const models::LayerSpec& layer = spec_.layers[unit.first_layer + i];
      x = layer.forward(
          x, models::ParamViews(layer, full.narrow(0, unit.layer_offsets[i], layer.Numel())));
    }
    if (!with_autograd) {
      gathered->Free(u);
      continue;
    }
    // The last unit's backward comes right after the forward: keep it
    // gathered, as FSDP does for the root, and save one all-gather a step.
    if (reshard && u + 1 < units.size()) gathered->Free(u);
    if (reshard && x.requires_grad()) {
      std::weak_ptr<GatheredUnits> weak = gathered;
      x.register_hook([weak, u](const at::Tensor&) {
        if (auto g = weak.lock()) g->BeforeBackward(u);
      });
    }
  }
  return x;
}

void ShardedModel::ZeroGrad() {
  runtime_->FinishGradients();  // a reduction still in flight must land first
  if (local_grad_.defined()) local_grad_.zero_();
}

at::Tensor ShardedModel::LocalGrad() const {
  runtime_->FinishGradients();
  return local_grad_;
}

FlatOptimizer& ShardedModel::optimizer() {
  if (!optimizer_) throw FailedPrecondition("ShardedModel: a non-trainable model has no optimizer");
  return *optimizer_;
}

void ShardedModel::AllReduceGradients() {
  // One all-reduce of the whole local gradient buffer (it is contiguous): on
  // Gloo every collective costs ~0.15-0.5 ms however small, so for the small
  // models of RL one bucket beats one per unit (measured in learner_bench).
  const at::ScalarType reduce = options_.sharding.mixed_precision.reduce_dtype;
  at::Tensor buf = reduce == local_grad_.scalar_type() ? local_grad_ : local_grad_.to(reduce);
  comm_->AllReduceSum(buf, "all-reduce of the gradient").Wait();
  buf.div_(comm_->world_size());
  if (!buf.is_same(local_grad_)) local_grad_.copy_(buf);
}

void ShardedModel::ClipGradients() {
  // Padding gradients are exactly zero (no view covers the padding), so the
  // squared norm of the whole local buffer is the squared norm of the real
  // parameters' gradient slice this rank owns.
  at::Tensor sq = local_grad_.to(at::kDouble).pow(2).sum().reshape({1});
  if (!direct_) comm_->AllReduceSum(sq, "all-reduce of the squared gradient norm").Wait();
  last_grad_norm_ = std::sqrt(sq.item<double>());
  // torch::nn::utils::clip_grad_norm_'s formula.
  const double coef = options_.optimizer.max_grad_norm / (last_grad_norm_ + 1e-6);
  if (coef < 1) local_grad_.mul_(coef);
}

void ShardedModel::Step() {
  if (!optimizer_) throw FailedPrecondition("ShardedModel::Step on a non-trainable model");
  at::NoGradGuard no_grad;
  // The reduce-scatters backward issued ran while backward went on; they
  // must be complete before the gradients are clipped or applied.
  runtime_->FinishGradients();
  if (options_.sharding.strategy == ShardingStrategy::kNoShard && comm_->world_size() > 1 &&
      options_.sharding.reduce_gradients) {
    AllReduceGradients();
  }
  if (options_.optimizer.max_grad_norm > 0) ClipGradients();
  optimizer_->Step();
}

models::NamedTensors ShardedModel::FullParameters() {
  at::NoGradGuard no_grad;
  models::NamedTensors out;
  for (const UnitLayout& u : runtime_->units) {
    at::Tensor shard = local_flat_.narrow(0, u.local_offset, u.shard_numel);
    at::Tensor full = shard;
    if (!direct_) {
      full = at::empty({u.padded_numel}, shard.options());
      comm_->AllGather(shard, full, "all-gather of unit '" + u.name + "' for FullParameters")
          .Wait();
    }
    for (const ParamLayout& p : u.params) {
      out.emplace_back(p.name, full.narrow(0, p.offset, p.numel).view(p.shape).clone());
    }
  }
  return out;
}

void ShardedModel::LoadFullParameters(const models::NamedTensors& named) {
  std::map<std::string, at::Tensor> by_name(named.begin(), named.end());
  const int rank = direct_ ? 0 : comm_->rank();
  at::NoGradGuard no_grad;
  for (const UnitLayout& u : runtime_->units) {
    at::Tensor full = at::zeros({u.padded_numel}, local_flat_.options());
    for (const ParamLayout& p : u.params) {
      auto it = by_name.find(p.name);
      if (it == by_name.end())
        throw InvalidArgument("LoadFullParameters: missing '" + p.name + "'");
      if (it->second.numel() != p.numel || it->second.sizes() != at::IntArrayRef(p.shape)) {
        throw InvalidArgument("LoadFullParameters: shape mismatch for '" + p.name + "'");
      }
      full.narrow(0, p.offset, p.numel).copy_(it->second.reshape(-1));
    }
    local_flat_.narrow(0, u.local_offset, u.shard_numel)
        .copy_(full.narrow(0, rank * u.shard_numel, u.shard_numel));
  }
}

std::unique_ptr<ShardedModel> ShardedModel::MakeTarget() const {
  ShardedModelOptions target_options = options_;
  target_options.trainable = false;
  auto target = std::make_unique<ShardedModel>(spec_, target_options, comm_);
  target->CopyFrom(*this);
  return target;
}

void ShardedModel::CopyFrom(const ShardedModel& online) {
  if (online.local_flat_.numel() != local_flat_.numel()) {
    throw InvalidArgument("CopyFrom: models have different shard layouts");
  }
  at::NoGradGuard no_grad;
  local_flat_.copy_(online.local_flat_);
}

void ShardedModel::PolyakUpdate(const ShardedModel& online, double tau) {
  if (online.local_flat_.numel() != local_flat_.numel()) {
    throw InvalidArgument("PolyakUpdate: models have different shard layouts");
  }
  if (!(tau >= 0 && tau <= 1)) throw InvalidArgument("PolyakUpdate: tau must be in [0, 1]");
  at::NoGradGuard no_grad;
  local_flat_.lerp_(online.local_flat_, tau);
}

StateBytes ShardedModel::LocalStateBytes() const {
  StateBytes b;
  b.params = local_flat_.nbytes();
  b.grads = local_grad_.defined() ? local_grad_.nbytes() : 0;
  b.optimizer = optimizer_ ? optimizer_->StateBytes() : 0;
  return b;
}

StateBytes ShardedModel::UnshardedStateBytes() const {
  const int64_t bytes = spec_.Numel() * local_flat_.element_size();
  StateBytes b;
  b.params = bytes;
  if (options_.trainable) {
    b.grads = bytes;
    b.optimizer = bytes * FlatOptimizer::StateTensorsPerParam(options_.optimizer.kind);
  }
  return b;
}

int64_t ShardedModel::PeakGatheredBytes() const { return runtime_->peak_gathered_bytes; }

int64_t ShardedModel::LargestUnitBytes() const {
  int64_t largest = 0;
  const int64_t es = at::elementSize(options_.sharding.mixed_precision.param_dtype);
  for (const UnitLayout& u : runtime_->units) largest = std::max(largest, u.padded_numel * es);
  return largest;
}

void ShardedModel::ResetPeak() { runtime_->peak_gathered_bytes = runtime_->gathered_bytes; }

}  // namespace rlswarm::learner
