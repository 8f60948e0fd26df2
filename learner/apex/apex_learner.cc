#include "learner/apex/apex_learner.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "common/errors.h"
#include "common/random.h"
#include "learner/checkpoint/checkpoint_reader.h"

namespace rlswarm::learner {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

ApeXLearner::ApeXLearner(const AlgorithmFactory& make_algorithm, ApeXOptions options,
                         ShardMesh mesh, c10::intrusive_ptr<c10d::Store> store)
    : options_(std::move(options)), comm_(mesh.world) {
  if (!comm_) comm_ = mesh.world = mesh.shard = std::make_shared<Communicator>();
  options_.Validate(comm_->world_size());
  local_batch_ = options_.batch_size / comm_->world_size();
  algorithm_ = make_algorithm(mesh);
  stager_ = std::make_unique<BatchStager>(options_.model.device);
  if (options_.publish_interval > 0) {
    std::vector<PublishedModel> published = algorithm_->published();
    broadcaster_ = std::make_unique<WeightsBroadcaster>(options_.publishing, published);
  }
  const std::vector<CheckpointedModel> checkpointed = algorithm_->checkpointed();
  if (options_.async_checkpoint && !options_.checkpoint_dir.empty()) {
    if (comm_->world_size() > 1 && !store) {
      spdlog::warn(
          "rank {}: asynchronous checkpoints at {} ranks need the rendezvous store; writing "
          "them synchronously",
          comm_->rank(), comm_->world_size());
    } else if (checkpointed.size() != 1) {
      spdlog::info("rank {}: {} checkpoints {} networks; writing them synchronously", comm_->rank(),
                   algorithm_->name(), checkpointed.size());
    } else {
      AsyncCheckpointOptions o;
      o.root = CheckpointRoot(checkpointed[0]);
      o.keep = options_.keep_checkpoints;
      checkpointer_ = std::make_unique<AsyncCheckpointer>(o, *checkpointed[0].online,
                                                          checkpointed[0].target, store);
    }
  }
  ResetSampler();
  interval_start_ = last_log_ = Clock::now();
}

ApeXLearner::~ApeXLearner() = default;

void ApeXLearner::ResetSampler() {
  if (prefetched_.valid()) prefetched_.wait();
  prefetched_ = {};
  pending_.reset();                                // sampled for another update count
  feed_.reset();                                   // sends the priorities still queued
  if (options_.sampler.endpoints.empty()) return;  // TrainOn only (tests)
  replay::ReplaySamplerOptions o = options_.sampler;
  o.seed = Mix64(Mix64(o.seed ^ static_cast<uint64_t>(comm_->rank()) << 32) +
                 static_cast<uint64_t>(updates_));
  sampler_ = std::make_unique<replay::ReplaySampler>(o);
  feed_ = std::make_unique<ReplayFeed>(*sampler_, *stager_);
}

std::string ApeXLearner::CheckpointRoot(const CheckpointedModel& m) const {
  return m.subdir.empty() ? options_.checkpoint_dir : options_.checkpoint_dir + "/" + m.subdir;
}

std::optional<std::string> ApeXLearner::Resume() {
  const std::vector<CheckpointedModel> models = algorithm_->checkpointed();
  // The roots are written in order, so the last one's newest complete
  // update is complete in the others too, unless one of theirs is damaged:
  // then the next older one of the last root.
  const std::string last_root = CheckpointRoot(models.back());
  for (const std::string& name : CheckpointNamesNewestFirst(last_root)) {
    bool complete = true;
    for (const CheckpointedModel& m : models) {
      if (std::optional<std::string> why = ValidateCheckpoint(CheckpointRoot(m) + "/" + name)) {
        spdlog::warn("rank {}: skipping checkpoint {}/{}: {}", comm_->rank(), CheckpointRoot(m),
                     name, *why);
        complete = false;
        break;
      }
    }
    if (!complete) continue;
    CheckpointProgress progress;
    for (const CheckpointedModel& m : models) {
      progress = LoadCheckpoint(CheckpointRoot(m) + "/" + name, *m.online, m.target);
    }
    updates_ = progress.update_count;
    published_version_ = static_cast<uint64_t>(updates_);  // versions must keep rising
    ResetSampler();
    return last_root + "/" + name;
  }
  return std::nullopt;
}

std::vector<double> ApeXLearner::TrainOn(const replay::SampledBatch& batch) {
  // A staged copy of the caller's batch: views on the CPU (the bytes are
  // shared, not copied), a device copy on CUDA.
  return TrainOnStaged(stager_->Stage(batch));
}

std::vector<double> ApeXLearner::TrainOnStaged(const StagedBatch& batch) {
  const auto t0 = Clock::now();
  stager_->MakeReady(batch);
  AlgorithmStep step = algorithm_->Train(batch, updates_ + 1);
  sum_loss_ += step.loss;
  sum_abs_td_ += step.mean_abs_td;
  const StepHealth& health = algorithm_->main_model().health();
  if (!health.skipped) {
    sum_grad_norm_ += health.grad_norm;
    ++applied_updates_;
  }
  if (health.update_to_weight_step != last_ratio_step_) {
    last_ratio_step_ = health.update_to_weight_step;
    sum_update_to_weight_ += health.update_to_weight;
    ++update_to_weight_count_;
  }
  sum_train_s_ += Seconds(Clock::now() - t0);
  return std::move(step.priorities);
}

void ApeXLearner::UpdateTarget() { algorithm_->AfterUpdate(updates_); }

bool ApeXLearner::FetchPendingBatch() {
  if (pending_) return true;
  try {
    pending_ = NextBatch();
  } catch (const DeadlineExceeded& e) {
    // Replay is filling or its rate limiter holds the batch: normal.
    spdlog::debug("rank {}: waiting for replay: {}", comm_->rank(), e.what());
    return false;
  } catch (const Unavailable& e) {
    const auto now = Clock::now();
    ++replay_failures_;
    if (!replay_down_since_) {
      replay_down_since_ = now;
      replay_warned_at_ = now;
      replay_failures_ = 0;
      spdlog::warn("rank {}: waiting for replay: {}", comm_->rank(), e.what());
    } else if (now - replay_warned_at_ >= kReplayWarningInterval) {
      spdlog::warn(
          "rank {}: still waiting for replay after {:.0f} s ({} failed samples since the "
          "last warning): {}",
          comm_->rank(), Seconds(now - *replay_down_since_), replay_failures_, e.what());
      replay_warned_at_ = now;
      replay_failures_ = 0;
    }
    std::this_thread::sleep_for(replay_backoff_);
    replay_backoff_ = std::min(2 * replay_backoff_, kReplayBackoffMax);
    return false;
  }
  replay_backoff_ = std::chrono::milliseconds(1);
  if (replay_down_since_) {
    spdlog::info("rank {}: replay is back after {:.1f} s", comm_->rank(),
                 Seconds(Clock::now() - *replay_down_since_));
    replay_down_since_.reset();
  }
  return true;
}

bool ApeXLearner::AgreeToTrain(bool have_batch, bool stop_requested) {
  if (comm_->world_size() == 1) {
    stop_agreed_ = stop_requested;
    return have_batch && !stop_requested;
  }
  // [ranks without a batch, ranks that asked to stop]
  at::Tensor flags = at::tensor({have_batch ? 0.0f : 1.0f, stop_requested ? 1.0f : 0.0f});
  comm_->ControlAllReduceSum(flags, "ready");
  const float* f = flags.data_ptr<float>();
  stop_agreed_ = f[1] > 0;
  return f[0] == 0 && !stop_agreed_;
}

bool ApeXLearner::Update(bool stop_requested) {
  if (!sampler_) throw FailedPrecondition("learner: no replay endpoints");
  const auto t0 = Clock::now();
  const bool writing = checkpointer_ && checkpointer_->in_flight();
  stop_agreed_ = false;
  // A rank whose replay has nothing still takes part in the agreement, so
  // that the others, which may hold batches, learn it and wait with it.
  const bool have_batch = FetchPendingBatch();
  if (!AgreeToTrain(have_batch, stop_requested)) return false;
  // Keeps the sampled bytes alive while the tensors view them.
  StagedBatch batch = std::move(*pending_);
  pending_.reset();
  sum_sample_s_ += Seconds(Clock::now() - t0);
  if (options_.replay_prefetch) prefetched_ = feed_->Prefetch(local_batch_, DrawSeed(updates_ + 2));
  FinishUpdate(std::move(batch), t0, writing);
  return true;
}

bool ApeXLearner::UpdateOn(StagedBatch batch, bool stop_requested) {
  const auto t0 = Clock::now();
  const bool writing = checkpointer_ && checkpointer_->in_flight();
  stop_agreed_ = false;
  if (!AgreeToTrain(true, stop_requested)) return false;
  FinishUpdate(std::move(batch), t0, writing);
  return true;
}

void ApeXLearner::FinishUpdate(StagedBatch batch, Clock::time_point t0, bool writing) {
  for (int64_t v : batch.host.policy_versions) {
    if (v > 0) {
      sum_staleness_ += static_cast<double>(updates_ - v);
      ++staleness_items_;
    }
  }
  std::vector<double> priorities = TrainOnStaged(batch);
  // A skipped update learned nothing from the batch, and a NaN or Inf
  // priority would poison the shard's sum tree: that batch keeps the
  // priorities it had.
  const bool finite =
      std::all_of(priorities.begin(), priorities.end(), [](double p) { return std::isfinite(p); });
  const bool skipped = algorithm_->main_model().health().skipped;
  if (skipped || !finite) {
    spdlog::warn(
        "rank {}: update {} {}; its priorities are not sent", comm_->rank(), updates_ + 1,
        skipped ? "skipped: non-finite gradient on some rank" : "gave non-finite priorities");
  } else if (options_.update_priorities && feed_) {
    feed_->SendPriorities(std::move(batch.host.keys), std::move(priorities));
  }
  ++updates_;
  ++interval_updates_;
  UpdateTarget();
  if (options_.publish_interval > 0 && updates_ % options_.publish_interval == 0) Publish();
  Clock::duration save_time{0};
  if (options_.checkpoint_interval > 0 && updates_ % options_.checkpoint_interval == 0) {
    const auto save_start = Clock::now();
    StartCheckpoint();
    save_time = Clock::now() - save_start;  // logged as the save's stall
  }
  if (checkpointer_) {
    const double update_s = Seconds(Clock::now() - t0 - save_time);
    (writing ? writing_s_ : idle_s_) += update_s;
    ++(writing ? writing_updates_ : idle_updates_);
    LogFinishedCheckpoint();
  }
  MaybeLog();
}

uint64_t ApeXLearner::DrawSeed(int64_t update) const {
  return DeriveSeed(options_.sampler.seed ^ static_cast<uint64_t>(comm_->rank()) << 32,
                    static_cast<uint64_t>(update));
}

StagedBatch ApeXLearner::NextBatch() {
  if (!prefetched_.valid()) {
    return stager_->Stage(sampler_->Sample(local_batch_, std::nullopt, DrawSeed(updates_ + 1)));
  }
  std::future<StagedBatch> pending = std::move(prefetched_);
  return pending.get();  // rethrows the sampler's DeadlineExceeded / Unavailable
}

std::string ApeXLearner::SaveCheckpoint() {
  if (options_.checkpoint_dir.empty()) throw FailedPrecondition("learner: no checkpoint_dir");
  if (checkpointer_) {
    // Its writer's waits are bounded (agreement timeout), so this ends.
    while (!checkpointer_->Wait(std::chrono::seconds(10))) {
      spdlog::info("rank {}: waiting for the checkpoint in flight", comm_->rank());
    }
    LogFinishedCheckpoint();
  }
  std::string dir;
  for (const CheckpointedModel& m : algorithm_->checkpointed()) {
    dir = learner::SaveCheckpoint(CheckpointRoot(m), *m.online, m.target,
                                  CheckpointProgress{updates_, options_.model.seed},
                                  options_.keep_checkpoints);
  }
  return dir;
}

std::string ApeXLearner::StartCheckpoint() {
  if (!checkpointer_) return SaveCheckpoint();
  return checkpointer_->Save(CheckpointProgress{updates_, options_.model.seed});
}

void ApeXLearner::LogFinishedCheckpoint() {
  std::optional<AsyncSaveReport> r = checkpointer_->TakeFinished();
  if (!r) return;
  auto rate = [](int64_t n, double s) {
    return n > 0 && s > 0 ? fmt::format("{:.1f}", n / s) : std::string("n/a");
  };
  const double writing_rate = writing_s_ > 0 ? writing_updates_ / writing_s_ : 0;
  const double idle_rate = idle_s_ > 0 ? idle_updates_ / idle_s_ : 0;
  spdlog::info(
      "checkpoint update {} {} after {:.2f} s: training blocked {:.1f} ms; {} updates/s while the "
      "writer ran ({} updates), {} without it; {} updates/s lost",
      r->update_count, r->ok ? (comm_->rank() == 0 ? "published" : "durable") : "FAILED",
      r->write_seconds, 1e3 * r->stall_seconds, rate(writing_updates_, writing_s_),
      writing_updates_, rate(idle_updates_, idle_s_),
      writing_updates_ > 0 && idle_updates_ > 0 ? fmt::format("{:.1f}", idle_rate - writing_rate)
                                                : std::string("n/a"));
  writing_s_ = idle_s_ = 0;
  writing_updates_ = idle_updates_ = 0;
}

void ApeXLearner::Publish() {
  if (!broadcaster_ || static_cast<uint64_t>(updates_) <= published_version_) return;
  broadcaster_->Publish(static_cast<uint64_t>(updates_));
  published_version_ = static_cast<uint64_t>(updates_);
}

LearnerMetrics ApeXLearner::TakeMetrics() {
  const auto now = Clock::now();
  LearnerMetrics m;
  m.updates = updates_;
  const double n = static_cast<double>(std::max<int64_t>(interval_updates_, 1));
  const double elapsed = Seconds(now - interval_start_);
  m.updates_per_sec = elapsed > 0 ? interval_updates_ / elapsed : 0;
  m.loss = sum_loss_ / n;
  m.mean_abs_td = sum_abs_td_ / n;
  m.grad_norm = applied_updates_ > 0 ? sum_grad_norm_ / static_cast<double>(applied_updates_) : 0;
  m.update_to_weight = update_to_weight_count_ > 0
                           ? sum_update_to_weight_ / static_cast<double>(update_to_weight_count_)
                           : 0;
  m.nonfinite_skipped = algorithm_->main_model().health().skipped_steps;
  m.staleness = staleness_items_ ? sum_staleness_ / staleness_items_ : 0;
  m.sample_seconds = sum_sample_s_ / n;
  m.train_seconds = sum_train_s_ / n;
  m.priority_updates_lost = sampler_ ? sampler_->stats().priority_updates_lost : 0;
  interval_start_ = now;
  interval_updates_ = 0;
  sum_loss_ = sum_abs_td_ = sum_grad_norm_ = sum_staleness_ = sum_update_to_weight_ = 0;
  staleness_items_ = applied_updates_ = update_to_weight_count_ = 0;
  sum_sample_s_ = sum_train_s_ = 0;
  return m;
}

void ApeXLearner::MaybeLog() {
  if (options_.log_interval.count() <= 0) return;
  const auto now = Clock::now();
  if (now - last_log_ < options_.log_interval) return;
  last_log_ = now;
  const LearnerMetrics m = TakeMetrics();
  spdlog::info(
      "updates {} | {:.1f} updates/s | loss {:.4g} | mean |td| {:.4g} | grad norm {:.3g} | "
      "update/weight {:.2g} | staleness {:.1f} | sample {:.2f} ms, train {:.2f} ms per update | "
      "priority updates lost {}{}",
      m.updates, m.updates_per_sec, m.loss, m.mean_abs_td, m.grad_norm, m.update_to_weight,
      m.staleness, 1e3 * m.sample_seconds, 1e3 * m.train_seconds, m.priority_updates_lost,
      m.nonfinite_skipped > 0 ? fmt::format(" | skipped (non-finite) {}", m.nonfinite_skipped)
                              : "");
}

}  // namespace rlswarm::learner
