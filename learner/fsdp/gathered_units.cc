#include "learner/fsdp/gathered_units.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>

#include "learner/dist/trace_recorder.h"

namespace rlswarm::learner {
namespace {

// The backward of "gather unit u": reduce-scatters the full gradient into the
// gradient of the rank's shard. A hand-written Node rather than a custom
// autograd::Function so it can hold C++ state (the GatheredUnits) without
// routing it through IValues.
class ReduceScatterGrad : public torch::autograd::Node {
 public:
  ReduceScatterGrad(std::shared_ptr<GatheredUnits> units, size_t unit)
      : units_(std::move(units)), unit_(unit) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    // An undefined grad still takes part: every rank must issue the
    // collective, or the others wait for it until the timeout. The shard's
    // gradient arrives later (FinishGradients), so nothing flows to the
    // shard's AccumulateGrad now.
    units_->ReduceGradient(unit_, grads[0]);
    return {at::Tensor()};
  }
  std::string name() const override { return "rlswarm::learner::ReduceScatterGrad"; }
  void release_variables() override { units_.reset(); }

 private:
  std::shared_ptr<GatheredUnits> units_;
  size_t unit_;
};

}  // namespace

void ShardRuntime::TrackGathered(int64_t delta) {
  gathered_bytes += delta;
  peak_gathered_bytes = std::max(peak_gathered_bytes, gathered_bytes);
}

c10::DataPtr ShardRuntime::TakeSpareBuffer(size_t nbytes) {
  auto it = spare_buffers.find(nbytes);
  if (it == spare_buffers.end()) return {};
  c10::DataPtr data = std::move(it->second);
  spare_buffers.erase(it);
  spare_bytes -= static_cast<int64_t>(nbytes);
  return data;
}

void ShardRuntime::KeepSpareBuffer(size_t nbytes, c10::DataPtr data) {
  spare_bytes += static_cast<int64_t>(nbytes);
  spare_buffers.emplace(nbytes, std::move(data));
}

void ShardRuntime::StartReplicaReduction(PendingGradient& p) {
  if (p.slice.defined()) return;
  p.slice = p.reduction.Wait().contiguous();
  if (replica && sharding.reduce_gradients) {
    p.replica_reduction = replica->AllReduceSum(
        p.slice, "all-reduce over the replica group of unit '" + units[p.unit].name + "'");
  }
}

void ShardRuntime::FinishGradients() {
  // hybrid_shard: every replica all-reduce in flight before the first wait
  // (oldest first, the order every rank issues them in).
  for (PendingGradient& p : pending_gradients) StartReplicaReduction(p);
  while (!pending_gradients.empty()) FinishOldestGradient();
}

void ShardRuntime::FinishOldestGradient() {
  PendingGradient p = std::move(pending_gradients.front());
  pending_gradients.erase(pending_gradients.begin());
  at::NoGradGuard no_grad;
  StartReplicaReduction(p);
  p.replica_reduction.Wait();
  // Each rank's loss is the mean over its share of the global batch, so the
  // mean over all ranks (every shard group's ranks, summed over the replica
  // group for hybrid_shard) of the gradients is the gradient of the global
  // mean.
  const int ranks = comm->world_size() * (replica ? replica->world_size() : 1);
  at::Tensor slice = p.slice;
  if (sharding.reduce_gradients) slice = slice.div(ranks);
  at::Tensor& grad = shards[p.unit].mutable_grad();
  grad.add_(slice.to(grad.scalar_type()));
}

GatheredUnits::GatheredUnits(std::shared_ptr<ShardRuntime> runtime)
    : runtime_(std::move(runtime)), slots_(runtime_->units.size()) {}

GatheredUnits::~GatheredUnits() {
  for (Slot& s : slots_) {
    if (s.allocated) runtime_->TrackGathered(-static_cast<int64_t>(s.data.nbytes()));
  }
}

void GatheredUnits::Issue(size_t u) {
  if (u >= slots_.size()) return;
  Slot& s = slots_[u];
  if (s.allocated) return;  // gathered or in flight
  const UnitLayout& layout = runtime_->units[u];
  const at::ScalarType dtype = runtime_->sharding.mixed_precision.param_dtype;
  const at::Tensor& shard = runtime_->shards[u];
  const size_t nbytes = static_cast<size_t>(layout.padded_numel) * at::elementSize(dtype);
  c10::DataPtr spare = runtime_->TakeSpareBuffer(nbytes);
  if (!s.data.defined()) {
    const at::TensorOptions options = shard.options().dtype(dtype).requires_grad(false);
    if (spare) {
      s.data = at::empty({0}, options);
      AdoptStorage(s.data, std::move(spare), nbytes);
      s.data.unsafeGetTensorImpl()->set_sizes_contiguous({layout.padded_numel});
    } else {
      s.data = at::empty({layout.padded_numel}, options);
    }
  } else if (spare) {
    // Refill the StorageImpl that Free() emptied: autograd's saved views of
    // this unit point at it and see the new data.
    AdoptStorage(s.data, std::move(spare), nbytes);
  } else {
    ReallocateStorage(s.data, nbytes);
  }
  s.allocated = true;
  runtime_->TrackGathered(static_cast<int64_t>(s.data.nbytes()));
  at::NoGradGuard no_grad;
  s.pending = runtime_->comm->AllGather(shard.detach().to(dtype), s.data,
                                        "all-gather of unit '" + layout.name + "'");
}

at::Tensor GatheredUnits::Acquire(size_t u, bool with_autograd) {
  Issue(u);
  slots_[u].pending.Wait();
  at::Tensor full = slots_[u].data.variable_data();  // same storage, own version counter
  if (with_autograd) {
    auto node = std::shared_ptr<ReduceScatterGrad>(new ReduceScatterGrad(shared_from_this(), u),
                                                   torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(runtime_->shards[u]));
    torch::autograd::create_gradient_edge(full, node);
  }
  return full;
}

void GatheredUnits::Free(size_t u) {
  Slot& s = slots_[u];
  if (!s.allocated) return;
  s.pending.Wait();  // never free a buffer Gloo is still writing
  const size_t nbytes = s.data.nbytes();
  runtime_->TrackGathered(-static_cast<int64_t>(nbytes));
  runtime_->KeepSpareBuffer(nbytes, TakeStorage(s.data));
  s.allocated = false;
}

void GatheredUnits::BeforeBackward(size_t u) {
  if (TraceRecorder::Active()) slots_[u].backward.Begin("backward " + runtime_->units[u].name);
  Issue(u);
  const int depth = runtime_->sharding.num_to_backward_prefetch;
  for (int j = 1; j <= depth && static_cast<int64_t>(u) - j >= 0; ++j) Issue(u - j);
  slots_[u].pending.Wait();
}

void GatheredUnits::ReduceGradient(size_t u, const at::Tensor& full_grad) {
  slots_[u].backward.End();  // the unit's gradient is complete
  const UnitLayout& layout = runtime_->units[u];
  const ShardingOptions& opts = runtime_->sharding;
  Communicator& comm = *runtime_->comm;
  const at::Tensor& shard = runtime_->shards[u];
  at::NoGradGuard no_grad;
  at::Tensor grad = full_grad.defined()
                        ? full_grad.to(opts.mixed_precision.reduce_dtype).contiguous()
                        : at::zeros({layout.padded_numel},
                                    shard.options().dtype(opts.mixed_precision.reduce_dtype));
  // Each reduction in flight holds its unit's full-size gradient and the
  // backend's full-size output: waiting for all of them only at Step() held
  // every unit's (a whole model's worth, measured as the largest term of a
  // 50 M model's peak). Bounded, as FSDP2 bounds its reduce-scatter states:
  // the oldest has had a whole unit's backward to complete.
  while (runtime_->pending_gradients.size() >= ShardRuntime::kMaxPendingGradients) {
    runtime_->FinishOldestGradient();
  }
  ShardRuntime::PendingGradient pending;
  pending.unit = u;
  if (opts.reduce_gradients) {
    pending.reduction = comm.ReduceScatterSumAsync(grad, opts.reduce_scatter,
                                                   "reduce-scatter of unit '" + layout.name + "'");
  } else {
    // The negative control: this rank's slice of its own gradient, no
    // collective (a world-1 "reduction" of the slice).
    pending.reduction = Communicator().ReduceScatterSumAsync(
        grad.narrow(0, comm.rank() * layout.shard_numel, layout.shard_numel).clone(),
        ReduceScatterImpl::kNative, "local slice");
  }
  runtime_->pending_gradients.push_back(std::move(pending));
  // hybrid_shard: the units reduced before this one had this unit's
  // backward to finish their reduce-scatters; their replica all-reduces go
  // out now and overlap the rest of backward.
  if (runtime_->replica) {
    std::vector<ShardRuntime::PendingGradient>& all = runtime_->pending_gradients;
    for (size_t i = 0; i + 1 < all.size(); ++i) runtime_->StartReplicaReduction(all[i]);
  }
  Free(u);
}

}  // namespace rlswarm::learner
