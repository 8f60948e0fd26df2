#pragma once

// The Ape-X DQN learner of one rank (Horgan et al. 2018): each rank draws
// its share of the global batch from the sharded replay service through its
// own ReplaySampler, trains the sharded online network on it (dqn_loss.h,
// one optimizer step over all ranks' shards), sends the new priorities back
// (each key to the replay shard that owns it), updates the sharded target
// network, and every publish_interval updates publishes the weights
// (weights_broadcaster.h) with version = the update count; every
// checkpoint_interval updates it writes a sharded checkpoint
// (checkpoint.h).
//
// Data path of one update:
//   Sample(B / W) -> SampledBatch (bytes) -> BatchStager: at::from_blob on
//   the CPU (no copy), pinned memory + asynchronous copy on a CUDA copy
//   stream (device_copies.h) -> (with options.prefetch the next batch is
//   sampled and staged meanwhile on the ReplayFeed's thread) -> online
//   Forward([s; s']), target Forward(s') -> DqnLoss -> backward
//   (reduce-scatters, asynchronous) -> Step -> one device-to-host copy of
//   the priorities and the metrics -> UpdatePriorities (queued on the
//   ReplayFeed's thread behind the next sample) -> target update.
//
// Collective contract: Update(), TrainOn(), SaveCheckpoint(), Publish()
// (full mode) and AgreeToStop() are collectives: every rank calls them in
// the same order. Not thread-safe: one thread drives a DqnLearner.

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "learner/checkpoint.h"
#include "learner/device_copies.h"
#include "learner/dqn_learner_options.h"
#include "learner/replay_feed.h"
#include "learner/sharded_model.h"
#include "learner/weights_broadcaster.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm::learner {

// Averages over the updates since the last metrics() reset (a log interval).
struct LearnerMetrics {
  int64_t updates = 0;  // in total, including those before a resume
  double updates_per_sec = 0;
  double loss = 0;
  double mean_abs_td = 0;
  double grad_norm = 0;  // before clipping
  // Updates between the weights version an actor acted with and now
  // (update count - the item's policy_version), mean over sampled items
  // that carry a version.
  double staleness = 0;
  double sample_seconds = 0;  // per update, waiting for replay
  double train_seconds = 0;   // per update, forward/backward/step
  int64_t priority_updates_lost = 0;
};

class DqnLearner {
 public:
  // Builds the online and target networks (local), connects the sampler
  // lazily and binds the weights publisher. Throws InvalidArgument,
  // Unavailable (publisher cannot bind).
  DqnLearner(models::ModelSpec spec, DqnLearnerOptions options, std::shared_ptr<Communicator> comm);
  ~DqnLearner();

  // Loads the newest valid checkpoint under options.checkpoint_dir, if any
  // (corrupt or incomplete ones are skipped), and reseeds the sampler from
  // (seed, rank, update count). Local. Returns the directory loaded.
  std::optional<std::string> Resume();

  // Samples this rank's share, trains, sends priorities, updates the
  // target, and publishes / checkpoints when due. Returns false, having
  // issued no collective and changed nothing, when replay could not provide
  // a batch within the sampler's timeout (DeadlineExceeded: below
  // min_size_to_sample or rate limited; Unavailable: no shard up): every
  // rank may then retry. Collective errors (a rank died: Unavailable,
  // DeadlineExceeded after the group's timeout) propagate.
  bool Update();

  // Trains on one already-sampled batch (this rank's share); returns the
  // new priorities (|TD| + epsilon, one per row). Does not touch replay or
  // the target network. Collective.
  std::vector<double> TrainOn(const replay::SampledBatch& batch);
  // The same on a batch BatchStager staged (already on the device).
  std::vector<double> TrainOnStaged(const StagedBatch& batch);

  // Updates the target network as the options say, for update `updates()`.
  void UpdateTarget();

  // Writes a checkpoint now (collective); returns its directory.
  std::string SaveCheckpoint();
  // Publishes now with version = updates() (collective in full mode); a
  // no-op when that version was already published.
  void Publish();
  // True on every rank when any rank passes true. One all-reduce of a
  // scalar (free at world 1).
  bool AgreeToStop(bool local_stop);

  // Returns the metrics since the previous call and starts a new interval.
  LearnerMetrics TakeMetrics();
  // Logs TakeMetrics() when log_interval has passed since the last log.
  void MaybeLog();

  int64_t updates() const { return updates_; }
  ShardedModel& model() { return *online_; }
  ShardedModel& target() { return *target_; }
  WeightsBroadcaster& broadcaster() { return *broadcaster_; }
  replay::ReplaySampler& sampler() { return *sampler_; }
  int64_t local_batch_size() const { return local_batch_; }

 private:
  void ResetSampler();
  // The next batch: the prefetched one, or sampled and staged now.
  StagedBatch NextBatch();

  models::ModelSpec spec_;
  DqnLearnerOptions options_;
  std::shared_ptr<Communicator> comm_;
  int64_t local_batch_ = 0;
  std::unique_ptr<ShardedModel> online_;
  std::unique_ptr<ShardedModel> target_;
  std::unique_ptr<WeightsBroadcaster> broadcaster_;
  std::unique_ptr<replay::ReplaySampler> sampler_;
  std::unique_ptr<BatchStager> stager_;
  // Samples (options.prefetch: the next update's batch while this one
  // trains) and sends priorities on its own thread. Declared after sampler_
  // and stager_: destroyed (drained and joined) first.
  std::unique_ptr<ReplayFeed> feed_;
  std::future<StagedBatch> prefetched_;
  int64_t updates_ = 0;
  uint64_t published_version_ = 0;

  // The current metrics interval.
  std::chrono::steady_clock::time_point interval_start_;
  std::chrono::steady_clock::time_point last_log_;
  int64_t interval_updates_ = 0;
  double sum_loss_ = 0, sum_abs_td_ = 0, sum_grad_norm_ = 0, sum_staleness_ = 0;
  int64_t staleness_items_ = 0;
  double sum_sample_s_ = 0, sum_train_s_ = 0;
};

}  // namespace rlswarm::learner
