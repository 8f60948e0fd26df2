#include "learner/dqn_learner.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "replay/service/transition.h"

namespace rlswarm::learner {
namespace {

using Clock = std::chrono::steady_clock;

// SplitMix64 finaliser: decorrelates the per-rank sampler seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

DqnLearner::DqnLearner(models::ModelSpec spec, DqnLearnerOptions options,
                       std::shared_ptr<Communicator> comm)
    : spec_(std::move(spec)), options_(std::move(options)), comm_(std::move(comm)) {
  options_.Validate(spec_, comm_->world_size());
  local_batch_ = options_.batch_size / comm_->world_size();
  online_ = std::make_unique<ShardedModel>(spec_, options_.model, comm_);
  stager_ = std::make_unique<BatchStager>(options_.model.device);
  target_ = online_->MakeTarget();
  if (options_.publish_interval > 0) {
    broadcaster_ = std::make_unique<WeightsBroadcaster>(options_.publishing, *online_);
  }
  ResetSampler();
  interval_start_ = last_log_ = Clock::now();
}

DqnLearner::~DqnLearner() = default;

void DqnLearner::ResetSampler() {
  if (prefetched_.valid()) prefetched_.wait();
  prefetched_ = {};
  feed_.reset();                                   // sends the priorities still queued
  if (options_.sampler.endpoints.empty()) return;  // TrainOn only (tests)
  replay::ReplaySamplerOptions o = options_.sampler;
  o.seed = Mix(Mix(o.seed ^ static_cast<uint64_t>(comm_->rank()) << 32) +
               static_cast<uint64_t>(updates_));
  sampler_ = std::make_unique<replay::ReplaySampler>(o);
  feed_ = std::make_unique<ReplayFeed>(*sampler_, *stager_);
}

std::optional<std::string> DqnLearner::Resume() {
  std::optional<std::string> dir = FindLatestCheckpoint(options_.checkpoint_dir);
  if (!dir) return std::nullopt;
  const CheckpointProgress progress = LoadCheckpoint(*dir, *online_, target_.get());
  updates_ = progress.update_count;
  published_version_ = static_cast<uint64_t>(updates_);  // versions must keep rising
  ResetSampler();
  return dir;
}

std::vector<double> DqnLearner::TrainOn(const replay::SampledBatch& batch) {
  // A staged copy of the caller's batch: views on the CPU (the bytes are
  // shared, not copied), a device copy on CUDA.
  return TrainOnStaged(stager_->Stage(batch));
}

std::vector<double> DqnLearner::TrainOnStaged(const StagedBatch& batch) {
  const auto t0 = Clock::now();
  stager_->MakeReady(batch);
  const at::ScalarType dtype = options_.model.sharding.mixed_precision.param_dtype;
  const at::Device device = options_.model.device;
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
  // One online forward over [s; s'] instead of two: one set of all-gathers
  // per unit when sharded. Q(s') is only used detached (double-Q's argmax),
  // so its rows get a zero gradient.
  const int64_t rows = obs.size(0);
  at::Tensor both = online_->Forward(at::cat({obs, next_obs}));
  at::Tensor q = both.narrow(0, 0, rows);
  at::Tensor next_online = both.narrow(0, rows, rows).detach();
  DqnLossResult result = DqnLoss(q, next_online, next_target, targets, options_.loss);
  result.loss.backward();
  online_->Step();

  // One device-to-host copy for what the host needs of this update (the
  // priorities for replay, the loss and mean |TD| for the metrics): the one
  // synchronisation an update needs on CUDA; free on the CPU.
  at::NoGradGuard no_grad;
  const at::Tensor summary = at::cat({result.priorities.to(at::kDouble).reshape(-1),
                                      result.loss.detach().to(at::kDouble).reshape(1),
                                      result.td_error.abs().mean().to(at::kDouble).reshape(1)})
                                 .cpu();
  const double* p = summary.data_ptr<double>();
  const int64_t n = summary.numel() - 2;
  sum_loss_ += p[n];
  sum_abs_td_ += p[n + 1];
  sum_grad_norm_ += online_->last_grad_norm();
  sum_train_s_ += Seconds(Clock::now() - t0);
  return std::vector<double>(p, p + n);
}

void DqnLearner::UpdateTarget() {
  if (options_.target_tau > 0) {
    target_->PolyakUpdate(*online_, options_.target_tau);
  } else if (updates_ % options_.target_update_interval == 0) {
    target_->CopyFrom(*online_);
  }
}

bool DqnLearner::Update() {
  if (!sampler_) throw FailedPrecondition("learner: no replay endpoints");
  const auto t0 = Clock::now();
  // Keeps the sampled bytes alive while the tensors view them.
  StagedBatch batch;
  try {
    batch = NextBatch();
  } catch (const DeadlineExceeded& e) {
    // Replay is filling or its rate limiter holds the batch: normal.
    spdlog::debug("rank {}: waiting for replay: {}", comm_->rank(), e.what());
    return false;
  } catch (const Unavailable& e) {
    spdlog::warn("rank {}: waiting for replay: {}", comm_->rank(), e.what());
    return false;
  }
  sum_sample_s_ += Seconds(Clock::now() - t0);
  if (options_.prefetch) prefetched_ = feed_->Prefetch(local_batch_);
  for (int64_t v : batch.host.policy_versions) {
    if (v > 0) {
      sum_staleness_ += static_cast<double>(updates_ - v);
      ++staleness_items_;
    }
  }
  std::vector<double> priorities = TrainOnStaged(batch);
  if (options_.update_priorities) {
    feed_->SendPriorities(std::move(batch.host.keys), std::move(priorities));
  }
  ++updates_;
  ++interval_updates_;
  UpdateTarget();
  if (options_.publish_interval > 0 && updates_ % options_.publish_interval == 0) Publish();
  if (options_.checkpoint_interval > 0 && updates_ % options_.checkpoint_interval == 0) {
    SaveCheckpoint();
  }
  MaybeLog();
  return true;
}

StagedBatch DqnLearner::NextBatch() {
  if (!prefetched_.valid()) return stager_->Stage(sampler_->Sample(local_batch_));
  std::future<StagedBatch> pending = std::move(prefetched_);
  return pending.get();  // rethrows the sampler's DeadlineExceeded / Unavailable
}

std::string DqnLearner::SaveCheckpoint() {
  if (options_.checkpoint_dir.empty()) throw FailedPrecondition("learner: no checkpoint_dir");
  return learner::SaveCheckpoint(options_.checkpoint_dir, *online_, target_.get(),
                                 CheckpointProgress{updates_, options_.model.seed},
                                 options_.keep_checkpoints);
}

void DqnLearner::Publish() {
  if (!broadcaster_ || static_cast<uint64_t>(updates_) <= published_version_) return;
  broadcaster_->Publish(static_cast<uint64_t>(updates_));
  published_version_ = static_cast<uint64_t>(updates_);
}

bool DqnLearner::AgreeToStop(bool local_stop) {
  if (comm_->world_size() == 1) return local_stop;
  at::Tensor flag = at::full({1}, local_stop ? 1.0f : 0.0f);
  comm_->ControlAllReduceSum(flag, "stop");
  return flag.item<float>() > 0;
}

LearnerMetrics DqnLearner::TakeMetrics() {
  const auto now = Clock::now();
  LearnerMetrics m;
  m.updates = updates_;
  const double n = static_cast<double>(std::max<int64_t>(interval_updates_, 1));
  const double elapsed = Seconds(now - interval_start_);
  m.updates_per_sec = elapsed > 0 ? interval_updates_ / elapsed : 0;
  m.loss = sum_loss_ / n;
  m.mean_abs_td = sum_abs_td_ / n;
  m.grad_norm = sum_grad_norm_ / n;
  m.staleness = staleness_items_ ? sum_staleness_ / staleness_items_ : 0;
  m.sample_seconds = sum_sample_s_ / n;
  m.train_seconds = sum_train_s_ / n;
  m.priority_updates_lost = sampler_ ? sampler_->stats().priority_updates_lost : 0;
  interval_start_ = now;
  interval_updates_ = 0;
  sum_loss_ = sum_abs_td_ = sum_grad_norm_ = sum_staleness_ = 0;
  staleness_items_ = 0;
  sum_sample_s_ = sum_train_s_ = 0;
  return m;
}

void DqnLearner::MaybeLog() {
  if (options_.log_interval.count() <= 0) return;
  const auto now = Clock::now();
  if (now - last_log_ < options_.log_interval) return;
  last_log_ = now;
  const LearnerMetrics m = TakeMetrics();
  spdlog::info(
      "updates {} | {:.1f} updates/s | loss {:.4g} | mean |td| {:.4g} | grad norm {:.3g} | "
      "staleness {:.1f} | sample {:.2f} ms, train {:.2f} ms per update | priority updates lost "
      "{}",
      m.updates, m.updates_per_sec, m.loss, m.mean_abs_td, m.grad_norm, m.staleness,
      1e3 * m.sample_seconds, 1e3 * m.train_seconds, m.priority_updates_lost);
}

}  // namespace rlswarm::learner
