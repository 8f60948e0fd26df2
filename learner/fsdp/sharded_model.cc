#include "learner/fsdp/sharded_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "learner/dist/trace_recorder.h"
#include "learner/fsdp/activation_checkpoint.h"
#include "learner/fsdp/gathered_units.h"

namespace rlswarm::learner {

namespace {

// sum(x^2) of a 1-D tensor, accumulated in double (exact enough to tell a
// non-finite element from an overflowing float sum) one chunk at a time, so
// the double copy is a chunk (8 MB), not the whole gradient (400 MB for a
// 50 M parameter shard, a third of what 1-process training holds).
at::Tensor SquaredSumInDouble(const at::Tensor& x) {
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t n = x.numel();
  at::Tensor sum = x.narrow(0, 0, std::min(kChunk, n)).to(at::kDouble).square().sum();
  for (int64_t offset = kChunk; offset < n; offset += kChunk) {
    sum.add_(x.narrow(0, offset, std::min(kChunk, n - offset)).to(at::kDouble).square().sum());
  }
  return sum;
}

// Every layer's parameters of `unit` as shaped views of its gathered flat
// buffer, from one split of the whole buffer: autograd's backward of a split
// concatenates the parameters' gradients into the unit's flat gradient in
// one allocation (zeros for the padding), where a narrow per layer (and per
// parameter) zero-fills a full-size tensor for each and sums them: more
// memory in flight during backward and more time.
std::vector<std::vector<at::Tensor>> UnitParamViews(const models::ModelSpec& spec,
                                                    const UnitLayout& unit,
                                                    const at::Tensor& full) {
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (size_t i = 0; i < unit.num_layers; ++i) {
    for (const models::ParamSpec& p : spec.layers[unit.first_layer + i].params) {
      sizes.push_back(p.Numel());
      total += p.Numel();
    }
  }
  if (total < full.numel()) sizes.push_back(full.numel() - total);  // the padding
  const std::vector<at::Tensor> parts = at::split_with_sizes(full, sizes);
  std::vector<std::vector<at::Tensor>> views(unit.num_layers);
  size_t k = 0;
  for (size_t i = 0; i < unit.num_layers; ++i) {
    for (const models::ParamSpec& p : spec.layers[unit.first_layer + i].params) {
      views[i].push_back(parts[k++].view(p.shape));
    }
  }
  return views;
}

}  // namespace

void ShardedModelOptions::Validate(const models::ModelSpec& spec) const {
  spec.Validate();
  sharding.Validate(static_cast<int>(spec.layers.size()));
  optimizer.Validate();
}

ShardedModel::ShardedModel(models::ModelSpec spec, ShardedModelOptions options,
                           std::shared_ptr<Communicator> comm)
    : ShardedModel(std::move(spec), std::move(options), ShardMesh::OneDim(std::move(comm))) {}

ShardedModel::ShardedModel(models::ModelSpec spec, ShardedModelOptions options, ShardMesh mesh)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      comm_(std::move(mesh.world)),
      shard_comm_(std::move(mesh.shard)),
      replica_comm_(std::move(mesh.replica)) {
  ShardMesh{comm_, shard_comm_, replica_comm_}.Validate();
  options_.Validate(spec_);
  const ShardingStrategy strategy = options_.sharding.strategy;
  if (replica_comm_ && strategy != ShardingStrategy::kHybridShard) {
    throw InvalidArgument("ShardedModel: a 2-D mesh (" +
                          std::to_string(replica_comm_->world_size()) + " replicas x " +
                          std::to_string(shard_comm_->world_size()) +
                          " ranks) needs the hybrid_shard strategy, not " +
                          std::string(ShardingStrategyName(strategy)));
  }
  // A 1-rank group (NCCL on one GPU) runs the sharded path through it, so
  // the GPU code path runs on a one-GPU node too. hybrid_shard with shard
  // groups of 1 has no group to shard over: it is no_shard.
  const int world = shard_comm_->world_size();
  direct_ = (world == 1 && !shard_comm_->has_group()) || strategy == ShardingStrategy::kNoShard;
  const int shard_count = direct_ ? 1 : world;
  const int rank = direct_ ? 0 : shard_comm_->rank();

  runtime_ = std::make_shared<ShardRuntime>();
  runtime_->comm = shard_comm_;
  if (!direct_) runtime_->replica = replica_comm_;
  runtime_->sharding = options_.sharding;
  runtime_->units = MakeUnitLayouts(spec_, options_.sharding.LayersPerUnit(spec_), shard_count);

  const at::ScalarType master = options_.sharding.mixed_precision.master_dtype;
  const at::TensorOptions topts = at::TensorOptions().dtype(master).device(options_.device);
  local_flat_ = at::zeros({LocalNumel(runtime_->units)}, topts);
  if (options_.trainable) local_grad_ = at::zeros_like(local_flat_);

  // Initialise: every rank draws every parameter from the seed (each
  // parameter's stream is its own, so all ranks agree) and keeps the part
  // that falls into its slice. One parameter at a time: what the rank holds
  // beyond its shard while it starts is one parameter in double, not a
  // unit's (or the model's) full buffer, which would show in its peak.
  for (const UnitLayout& u : runtime_->units) {
    const int64_t slice_begin = rank * u.shard_numel;
    const int64_t slice_end = slice_begin + u.shard_numel;
    for (size_t i = 0; i < u.num_layers; ++i) {
      const size_t l = u.first_layer + i;
      int64_t offset = u.layer_offsets[i];  // of the parameter in the unit
      for (size_t p = 0; p < spec_.layers[l].params.size(); ++p) {
        const int64_t n = spec_.layers[l].params[p].Numel();
        const int64_t begin = std::max(offset, slice_begin);
        const int64_t end = std::min(offset + n, slice_end);
        if (begin < end) {
          const at::Tensor param = models::InitParam(spec_, l, p, options_.seed).reshape(-1);
          local_flat_.narrow(0, u.local_offset + begin - slice_begin, end - begin)
              .copy_(param.narrow(0, begin - offset, end - begin));
        }
        offset += n;
      }
    }
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
  const bool checkpoint = options_.sharding.activation_checkpointing && options_.trainable &&
                          at::GradMode::is_enabled();
  // Traced, unit u's backward runs from the gradient of its output to that
  // of its input: one hook per unit boundary ends one span and opens the
  // next (unit 0's input needs no gradient, so unit 0 has no span).
  const bool traced = TraceRecorder::Active() && options_.trainable && at::GradMode::is_enabled();
  auto backward_spans =
      traced ? std::make_shared<std::vector<TraceSpan>>(runtime_->units.size()) : nullptr;
  for (size_t u = 0; u < runtime_->units.size(); ++u) {
    const UnitLayout& unit = runtime_->units[u];
    TraceScope trace("forward ", unit.name);
    std::vector<at::Tensor> params;  // the unit's leaves, layer after layer
    for (size_t l = unit.first_layer; l < unit.first_layer + unit.num_layers; ++l) {
      for (const at::Tensor& p : layer_params_[l]) params.push_back(cast ? p.to(compute) : p);
    }
    UnitForward run = UnitRun(u, /*sharded=*/false);
    x = checkpoint ? CheckpointedForward(std::move(run), x, params, unit.name) : run(x, params);
    if (backward_spans && x.requires_grad()) {
      x.register_hook([spans = backward_spans, u, name = unit.name](const at::Tensor&) {
        if (u + 1 < spans->size()) (*spans)[u + 1].End();
        if (u > 0) (*spans)[u].Begin("backward " + name);
      });
    }
  }
  return x;
}

UnitForward ShardedModel::UnitRun(size_t u, bool sharded) const {
  // The graph may hold this until backward: it refers to the spec and the
  // layouts, which the model (outliving backward) and the runtime keep.
  return [spec = &spec_, runtime = runtime_, u, sharded](const at::Tensor& input,
                                                         const std::vector<at::Tensor>& params) {
    const UnitLayout& unit = runtime->units[u];
    at::Tensor x = input;
    size_t next = 0;  // direct: the first leaf of layer i in `params`
    // Sharded: params[0] is the unit's gathered flat buffer.
    const std::vector<std::vector<at::Tensor>> views =
        sharded ? UnitParamViews(*spec, unit, params[0]) : std::vector<std::vector<at::Tensor>>{};
    for (size_t i = 0; i < unit.num_layers; ++i) {
      const models::LayerSpec& layer = spec->layers[unit.first_layer + i];
      if (sharded) {
        x = layer.forward(x, views[i]);
      } else {
        x = layer.forward(x, std::vector<at::Tensor>(params.begin() + next,
                                                     params.begin() + next + layer.params.size()));
        next += layer.params.size();
      }
    }
    return x;
  };
}

at::Tensor ShardedModel::ForwardSharded(at::Tensor x) {
  const std::vector<UnitLayout>& units = runtime_->units;
  const bool with_autograd = options_.trainable && at::GradMode::is_enabled();
  const bool reshard = ReshardsAfterForward(options_.sharding.strategy);
  auto gathered = std::make_shared<GatheredUnits>(runtime_);
  for (size_t u = 0; u < units.size(); ++u) {
    TraceScope trace("forward ", units[u].name);
    gathered->Issue(u);
    for (int j = 1; j <= options_.sharding.num_to_forward_prefetch; ++j) gathered->Issue(u + j);
    at::Tensor full = gathered->Acquire(u, with_autograd);
    // Checkpointed, the unit's node saves only x and `full` (whose storage
    // full_shard frees below and the hook re-gathers before the node runs).
    UnitForward run = UnitRun(u, /*sharded=*/true);
    x = with_autograd && options_.sharding.activation_checkpointing
            ? CheckpointedForward(std::move(run), x, {full}, units[u].name)
            : run(x, {full});
    if (!with_autograd) {
      gathered->Free(u);
      continue;
    }
    // The last unit's backward comes right after the forward: keep it
    // gathered, as FSDP does for the root, and save one all-gather a step.
    if (reshard && u + 1 < units.size()) gathered->Free(u);
    // Traced, shard_grad_op registers the hook too: BeforeBackward then
    // finds the unit gathered and only opens the unit's backward span.
    if ((reshard || TraceRecorder::Active()) && x.requires_grad()) {
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

void ShardedModel::Step() {
  if (!optimizer_) throw FailedPrecondition("ShardedModel::Step on a non-trainable model");
  TraceScope trace("optimizer step");
  at::NoGradGuard no_grad;
  // The reduce-scatters backward issued ran while backward went on; they
  // must be complete before the gradients are clipped or applied.
  runtime_->FinishGradients();
  // The direct path (no_shard; hybrid_shard with shard groups of 1) holds
  // whole gradients: one all-reduce over every rank.
  if (direct_ && comm_->world_size() > 1 && options_.sharding.reduce_gradients) {
    AllReduceGradients();
  }
  // Padding gradients and parameters are exactly zero (no view covers the
  // padding), so the squared norms of the whole local buffers are those of
  // the real parameters' slices this rank owns. A non-finite gradient
  // element makes the squared sum NaN or Inf (no finite float overflows it
  // in double), hence the flag. Everything the update needs to know
  // globally travels in this one all-reduce: on Gloo a collective costs
  // ~0.15-0.5 ms however small.
  at::Tensor grad_sq = SquaredSumInDouble(local_grad_).reshape({1});
  at::Tensor weight_sq = local_flat_.norm().to(at::kDouble).pow(2).reshape({1});
  at::Tensor nonfinite = grad_sq.isfinite().logical_not().to(at::kDouble);
  at::Tensor previous_update_sq = pending_update_sq_.defined()
                                      ? pending_update_sq_.to(at::kDouble).reshape({1})
                                      : at::zeros({1}, grad_sq.options());
  at::Tensor stats = at::cat({grad_sq, weight_sq, nonfinite, previous_update_sq});
  // Over the shard group: on a 2-D mesh its R replicas hold the same
  // shards, so the group's sums are already the global ones.
  if (!direct_) shard_comm_->AllReduceSum(stats, "all-reduce of the update's norms").Wait();
  const at::Tensor host = stats.cpu();
  const double* v = host.data_ptr<double>();

  health_.grad_norm = std::sqrt(v[0]);
  if (pending_step_ > 0) {
    health_.update_to_weight = pending_weight_sq_ > 0 ? std::sqrt(v[3] / pending_weight_sq_) : 0;
    health_.update_to_weight_step = pending_step_;
  }
  pending_update_sq_ = at::Tensor();
  pending_step_ = 0;
  // Every rank sees the same sums, so all of them skip or none does: the
  // shards stay one consistent model.
  health_.skipped = v[2] > 0;
  if (health_.skipped) {
    ++health_.skipped_steps;
    return;
  }
  if (options_.optimizer.max_grad_norm > 0) {
    // torch::nn::utils::clip_grad_norm_'s formula.
    const double coef = options_.optimizer.max_grad_norm / (health_.grad_norm + 1e-6);
    if (coef < 1) local_grad_.mul_(coef);
  }
  pending_update_sq_ = optimizer_->Step();
  pending_weight_sq_ = v[1];
  pending_step_ = optimizer_->step();
}

models::NamedTensors ShardedModel::FullParameters() {
  at::NoGradGuard no_grad;
  models::NamedTensors out;
  for (const UnitLayout& u : runtime_->units) {
    at::Tensor shard = local_flat_.narrow(0, u.local_offset, u.shard_numel);
    at::Tensor full = shard;
    if (!direct_) {
      full = at::empty({u.padded_numel}, shard.options());
      shard_comm_->AllGather(shard, full, "all-gather of unit '" + u.name + "' for FullParameters")
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
  const int rank = shard_index();
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
  auto target = std::make_unique<ShardedModel>(spec_, target_options, mesh());
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
    b.optimizer = bytes * FlatOptimizer::StateTensorsPerParam(options_.optimizer);
  }
  return b;
}

int64_t ShardedModel::PeakGatheredBytes() const { return runtime_->peak_gathered_bytes; }

int64_t ShardedModel::SpareGatheredBytes() const { return runtime_->spare_bytes; }

int64_t ShardedModel::LargestUnitBytes() const {
  int64_t largest = 0;
  const int64_t es = at::elementSize(options_.sharding.mixed_precision.param_dtype);
  for (const UnitLayout& u : runtime_->units) largest = std::max(largest, u.padded_numel * es);
  return largest;
}

void ShardedModel::ResetPeak() { runtime_->peak_gathered_bytes = runtime_->gathered_bytes; }

const CommStats& ShardedModel::comm_stats() const {
  if (!replica_comm_) return comm_->stats();
  // G = 1 reuses the world as the replica plane: count each plane once.
  mesh_stats_ = {};
  std::vector<const Communicator*> planes = {comm_.get()};
  for (const Communicator* c : {shard_comm_.get(), replica_comm_.get()}) {
    if (std::find(planes.begin(), planes.end(), c) == planes.end()) planes.push_back(c);
  }
  for (const Communicator* c : planes) {
    const CommStats& s = c->stats();
    mesh_stats_.bytes_sent += s.bytes_sent;
    mesh_stats_.collectives += s.collectives;
    mesh_stats_.busy_seconds += s.busy_seconds;
    mesh_stats_.wait_seconds += s.wait_seconds;
    // Per plane: the planes' collectives may overlap each other too.
    mesh_stats_.span_union_seconds += s.span_union_seconds;
  }
  return mesh_stats_;
}

void ShardedModel::ResetCommStats() {
  comm_->ResetStats();
  shard_comm_->ResetStats();
  if (replica_comm_) replica_comm_->ResetStats();
}

}  // namespace rlswarm::learner
