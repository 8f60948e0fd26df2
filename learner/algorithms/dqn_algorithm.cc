#include "learner/algorithms/dqn_algorithm.h"

#include <ATen/ATen.h>

#include "common/errors.h"
#include "learner/dist/trace_recorder.h"
#include "replay/service/transition.h"

namespace rlswarm::learner {

void DqnOptions::Validate() const {
  if (!(target_tau >= 0 && target_tau <= 1)) {
    throw InvalidArgument("learner: target_tau must be in [0, 1]");
  }
  if (target_tau == 0 && target_update_interval < 1) {
    throw InvalidArgument("learner: target_update_interval must be >= 1 when target_tau is 0");
  }
  loss.Validate();
}

DqnAlgorithm::DqnAlgorithm(models::ModelSpec spec, const ShardedModelOptions& model,
                           DqnOptions options, ShardMesh mesh)
    : options_(std::move(options)) {
  options_.Validate();
  online_ = std::make_unique<ShardedModel>(std::move(spec), model, std::move(mesh));
  target_ = online_->MakeTarget();
}

AlgorithmStep DqnAlgorithm::Train(const StagedBatch& batch, int64_t /*update*/) {
  const at::ScalarType dtype = online_->options().sharding.mixed_precision.param_dtype;
  const at::Device device = online_->options().device;
  auto input = [&](const char* name) { return batch.Field(name).to(device, dtype); };
  at::Tensor obs = input(replay::transition::kObservation);
  at::Tensor next_obs = input(replay::transition::kNextObservation);
  DqnTargets targets;
  targets.action = batch.Field(replay::transition::kAction).to(device, at::kLong).reshape(-1);
  targets.reward = batch.Field(replay::transition::kReward).to(device).reshape(-1);
  targets.discount = batch.Field(replay::transition::kDiscount).to(device).reshape(-1);
  if (batch.weights.defined()) targets.weights = batch.weights.to(device);

  at::Tensor next_target;
  {
    at::NoGradGuard no_grad;
    next_target = target_->Forward(next_obs);
  }
  online_->ZeroGrad();
  // Q(s') is only used detached (double-Q's argmax). Sharded, one online
  // forward over [s; s'] needs one set of all-gathers per unit instead of
  // two, and its s' rows get a zero gradient (backward still runs over all
  // 2B rows). Where forward is local there is nothing to save, and backward
  // over B rows is cheaper (MinAtar net, batch 64, one core: 3-10% more
  // updates per second in a launch).
  const int64_t rows = obs.size(0);
  at::Tensor q;
  at::Tensor next_online;
  if (online_->ForwardIsLocal()) {
    {
      at::NoGradGuard no_grad;
      next_online = online_->Forward(next_obs);
    }
    q = online_->Forward(obs);
  } else {
    at::Tensor both = online_->Forward(at::cat({obs, next_obs}));
    q = both.narrow(0, 0, rows);
    next_online = both.narrow(0, rows, rows).detach();
  }
  DqnLossResult result = [&] {
    TraceScope trace("loss");
    return DqnLoss(q, next_online, next_target, targets, options_.loss);
  }();
  {
    TraceScope trace("backward");
    result.loss.backward();
  }
  online_->Step();

  // One device-to-host copy for what the host needs of this update (the
  // priorities for replay, the loss and mean |TD| for the metrics): the one
  // synchronisation an update needs on CUDA; free on the CPU.
  // Mean |TD| is summed on the host from the priorities (|TD| + epsilon).
  at::NoGradGuard no_grad;
  const at::Tensor summary =
      at::cat({result.priorities, result.loss.detach().to(at::kDouble).reshape(1)}).cpu();
  const double* p = summary.data_ptr<double>();
  const int64_t n = summary.numel() - 1;
  double abs_td = 0;
  for (int64_t i = 0; i < n; ++i) abs_td += p[i];
  abs_td = n > 0 ? abs_td / static_cast<double>(n) - options_.loss.priority_epsilon : 0;
  return {std::vector<double>(p, p + n), p[n], abs_td};
}

void DqnAlgorithm::AfterUpdate(int64_t update) {
  if (options_.target_tau > 0) {
    target_->PolyakUpdate(*online_, options_.target_tau);
  } else if (update % options_.target_update_interval == 0) {
    target_->CopyFrom(*online_);
  }
}

std::vector<CheckpointedModel> DqnAlgorithm::checkpointed() {
  return {{"", online_.get(), target_.get()}};
}

std::vector<PublishedModel> DqnAlgorithm::published() { return {{"", online_.get()}}; }

}  // namespace rlswarm::learner
