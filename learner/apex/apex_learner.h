#pragma once

// The Ape-X learner of one rank (Horgan et al. 2018), for any algorithm
// behind the seam of learner_algorithm.h (DQN, TD3): each rank draws its
// share of the global batch from the sharded replay service through its own
// ReplaySampler, has the algorithm train its sharded networks on it (one
// optimizer step over all ranks' shards), sends the new priorities back
// (each key to the replay shard that owns it), lets the algorithm update its
// targets, and every publish_interval updates publishes the weights
// (weights_broadcaster.h) with version = the update count; every
// checkpoint_interval updates it writes a sharded checkpoint of every
// network the algorithm names: on a writer thread while training goes on
// (async_checkpoint.h, the default, for an algorithm of one network and its
// target), or synchronously (checkpoint.h; one root per network,
// <dir>/<subdir>/update-N, written in order, so that the newest update
// complete in the last root is complete in all). With asynchronous
// checkpoints it logs, per save, how long training was blocked and the
// updates/s while the writer ran against those without it.
//
// Data path of one update:
//   Sample(B / W) -> SampledBatch (bytes) -> BatchStager: at::from_blob on
//   the CPU (no copy), pinned memory + asynchronous copy on a CUDA copy
//   stream (device_copies.h) -> (with options.replay_prefetch the next batch is
//   sampled and staged meanwhile on the ReplayFeed's thread) ->
//   LearnerAlgorithm::Train (forward, loss, backward with asynchronous
//   reduce-scatters, Step, one device-to-host copy of the priorities and
//   the metrics) -> UpdatePriorities (queued on the ReplayFeed's thread
//   behind the next sample) -> LearnerAlgorithm::AfterUpdate (targets).
//
// Collective contract: Update(), TrainOn(), SaveCheckpoint() and Publish()
// (full mode) are collectives: every rank calls them in the same order. Not
// thread-safe: one thread drives an ApeXLearner.

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "learner/apex/apex_options.h"
#include "learner/apex/device_copies.h"
#include "learner/apex/learner_algorithm.h"
#include "learner/apex/replay_feed.h"
#include "learner/apex/weights_broadcaster.h"
#include "learner/checkpoint/async_checkpoint.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/fsdp/sharded_model.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm::learner {

// Averages over the updates since the last metrics() reset (a log interval).
struct LearnerMetrics {
  int64_t updates = 0;  // in total, including those before a resume
  double updates_per_sec = 0;
  double loss = 0;
  double mean_abs_td = 0;
  // Global L2 norm of the gradient before clipping, mean over the interval's
  // applied updates (a skipped update's norm is not finite).
  double grad_norm = 0;
  // ||delta theta|| / ||theta|| of the optimizer steps, global, mean over
  // those whose ratio became known in the interval (it lags one update,
  // StepHealth); 0 when none did.
  double update_to_weight = 0;
  // Updates whose optimizer step every rank skipped because some rank's
  // gradient held NaN or Inf, since this learner started (their priorities
  // are not sent either).
  int64_t nonfinite_skipped = 0;
  // Updates between the weights version an actor acted with and now
  // (update count - the item's policy_version), mean over sampled items
  // that carry a version.
  double staleness = 0;
  double sample_seconds = 0;  // per update, waiting for replay
  double train_seconds = 0;   // per update, forward/backward/step
  int64_t priority_updates_lost = 0;
};

// Builds the algorithm on the learner's mesh (a default one-rank
// Communicator when the caller gave none).
using AlgorithmFactory = std::function<std::unique_ptr<LearnerAlgorithm>(const ShardMesh& mesh)>;

class ApeXLearner {
 public:
  // Builds the algorithm's networks (make_algorithm on `mesh`; the batch
  // shares, seeds and the stop agreement use mesh.world), connects the
  // sampler lazily and binds the weights publisher. `store`: the rendezvous
  // store (ProcessGroupHandle::store), which asynchronous checkpoints at
  // world size > 1 agree through; null: those are written synchronously.
  // Throws InvalidArgument, Unavailable (publisher cannot bind, store
  // unreachable).
  ApeXLearner(const AlgorithmFactory& make_algorithm, ApeXOptions options, ShardMesh mesh,
              c10::intrusive_ptr<c10d::Store> store = {});
  // Joins the checkpoint writer before the networks go: a save in flight
  // finishes its write, but rank 0 no longer waits for the others' reports
  // (that save stays unpublished; SaveCheckpoint() first for a final one).
  virtual ~ApeXLearner();

  // Loads the newest valid checkpoint under options.checkpoint_dir, if any
  // (corrupt or incomplete ones are skipped; with several networks the
  // newest update complete for all), and reseeds the sampler from (seed,
  // rank, update count). Local. Returns the directory loaded (of the last
  // network's root).
  std::optional<std::string> Resume();

  // Samples this rank's share, agrees with the other ranks that every rank
  // has its batch and none asked to stop (one all-reduce of two scalars at
  // world > 1), then trains, sends priorities, updates the target, and
  // publishes / checkpoints when due. Returns false, having trained nothing,
  // when some rank's replay could not provide a batch within the sampler's
  // timeout (DeadlineExceeded: below min_size_to_sample or rate limited;
  // Unavailable: no shard up) or some rank passed `stop_requested`
  // (stop_agreed() then says so on every rank): every rank returns the same,
  // so the ranks stay in step however long replay makes them wait, and a
  // stop while they wait ends them all at the same update (ready for a final
  // SaveCheckpoint together). A rank that got its batch keeps it for the
  // next call. Collective errors (a rank died: Unavailable,
  // DeadlineExceeded after the group's timeout) propagate.
  //
  // Each update's draw is seeded from (sampler seed, rank, update number)
  // (ReplaySampler::Sample's draw_seed): a resumed run draws from the same
  // replay contents what the uninterrupted one would have.
  bool Update(bool stop_requested = false);
  // Update() on a batch this rank already holds (learner_bench times the
  // learner's whole update with it, replay left out): the agreement, train,
  // priorities (sent when a sampler exists), target, publish, checkpoint and
  // metrics. Returns false, having trained nothing, when some rank passed
  // `stop_requested`. Collective: every rank calls it with its own batch.
  bool UpdateOn(StagedBatch batch, bool stop_requested = false);
  // Whether the last Update() returned false because some rank asked to stop.
  bool stop_agreed() const { return stop_agreed_; }

  // Trains on one already-sampled batch (this rank's share) as update
  // updates() + 1; returns the new priorities (one per row). Does not touch
  // replay, the update count or AfterUpdate's targets. When a rank's
  // gradient is non-finite every rank skips the optimizer step
  // (main_model().health().skipped). Collective.
  std::vector<double> TrainOn(const replay::SampledBatch& batch);
  // The same on a batch BatchStager staged (already on the device).
  std::vector<double> TrainOnStaged(const StagedBatch& batch);

  // The algorithm's target work for update `updates()` (AfterUpdate).
  void UpdateTarget();

  // Writes a checkpoint now, synchronously, after waiting for an
  // asynchronous one in flight (collective); returns its directory once it
  // is published. Throws Unavailable as learner::SaveCheckpoint.
  std::string SaveCheckpoint();
  // The periodic save of Update(): asynchronous when configured (returns
  // when the shards are copied; the directory is published later), else
  // SaveCheckpoint(). Collective. Returns the directory.
  std::string StartCheckpoint();
  // Null unless checkpoints are asynchronous.
  AsyncCheckpointer* async_checkpointer() { return checkpointer_.get(); }
  // Publishes now with version = updates() (collective in full mode); a
  // no-op when that version was already published.
  void Publish();
  // Returns the metrics since the previous call and starts a new interval.
  LearnerMetrics TakeMetrics();
  // Logs TakeMetrics() when log_interval has passed since the last log.
  void MaybeLog();

  int64_t updates() const { return updates_; }
  LearnerAlgorithm& algorithm() { return *algorithm_; }
  WeightsBroadcaster& broadcaster() { return *broadcaster_; }
  replay::ReplaySampler& sampler() { return *sampler_; }
  int64_t local_batch_size() const { return local_batch_; }

 private:
  void ResetSampler();
  // Logs a finished asynchronous save with the updates/s while it was
  // written against those without a writer, and starts a new comparison.
  void LogFinishedCheckpoint();
  // The next batch: the prefetched one, or sampled and staged now.
  StagedBatch NextBatch();
  // The draw seed of update `update` (1-based) on this rank.
  uint64_t DrawSeed(int64_t update) const;
  // Samples into pending_ unless it holds a batch; false (after the back-off
  // when no shard is up) when replay has none.
  bool FetchPendingBatch();
  // The readiness agreement of Update(): every rank has a batch and none
  // asked to stop. Sets stop_agreed_.
  bool AgreeToTrain(bool have_batch, bool stop_requested);
  // What Update() does once the ranks agreed to train on `batch`: train,
  // priorities, target, publish, checkpoint, metrics. `t0`: when the update
  // began; `writing`: whether an asynchronous save was in flight then.
  void FinishUpdate(StagedBatch batch, std::chrono::steady_clock::time_point t0, bool writing);

  // The root of checkpointed network `m` under checkpoint_dir.
  std::string CheckpointRoot(const CheckpointedModel& m) const;

  ApeXOptions options_;
  std::shared_ptr<Communicator> comm_;
  int64_t local_batch_ = 0;
  std::unique_ptr<LearnerAlgorithm> algorithm_;
  std::unique_ptr<WeightsBroadcaster> broadcaster_;
  std::unique_ptr<replay::ReplaySampler> sampler_;
  std::unique_ptr<BatchStager> stager_;
  // Samples (options.replay_prefetch: the next update's batch while this one
  // trains) and sends priorities on its own thread. Declared after sampler_
  // and stager_: destroyed (drained and joined) first.
  std::unique_ptr<ReplayFeed> feed_;
  std::future<StagedBatch> prefetched_;
  // This rank's batch for the next update, kept while another rank waits
  // for its own.
  std::optional<StagedBatch> pending_;
  bool stop_agreed_ = false;
  int64_t updates_ = 0;
  uint64_t published_version_ = 0;
  // Asynchronous checkpoints; declared after the networks it copies from, so
  // destroyed (its writer joined) before them.
  std::unique_ptr<AsyncCheckpointer> checkpointer_;
  // Update time (without the save's own stall) and count with a writer in
  // flight and without, since the last finished save was logged.
  double writing_s_ = 0, idle_s_ = 0;
  int64_t writing_updates_ = 0, idle_updates_ = 0;

  // The current metrics interval.
  std::chrono::steady_clock::time_point interval_start_;
  std::chrono::steady_clock::time_point last_log_;
  int64_t interval_updates_ = 0;
  double sum_loss_ = 0, sum_abs_td_ = 0, sum_grad_norm_ = 0, sum_staleness_ = 0;
  int64_t applied_updates_ = 0;  // the interval's updates that were not skipped
  double sum_update_to_weight_ = 0;
  int64_t update_to_weight_count_ = 0;
  int64_t last_ratio_step_ = 0;  // StepHealth::update_to_weight_step last counted
  int64_t staleness_items_ = 0;
  double sum_sample_s_ = 0, sum_train_s_ = 0;

  // An unreachable replay is reported when it starts, every
  // kReplayWarningInterval while it lasts (with the failed samples since),
  // and when it ends, instead of once per failed sample.
  static constexpr std::chrono::seconds kReplayWarningInterval{10};
  std::optional<std::chrono::steady_clock::time_point> replay_down_since_;
  std::chrono::steady_clock::time_point replay_warned_at_;
  int64_t replay_failures_ = 0;  // failed samples since the last warning
  // How long to wait before the next sample while no shard is up (a sampler
  // with no shard up fails at once: without it the learner spins a core).
  // Doubles from 1 ms up to kReplayBackoffMax; reset when replay is back.
  static constexpr std::chrono::milliseconds kReplayBackoffMax{100};
  std::chrono::milliseconds replay_backoff_{1};
};

}  // namespace rlswarm::learner
