#pragma once

// The learner's traffic with replay, off the training thread: one worker
// thread samples and stages the next batch (the prefetch) and sends the
// priorities of finished updates, in the order they were asked for. The
// training thread only waits for the batch it needs next.
//
//   update k:  batch k <- Next()   (sampled and staged while update k-1 trained)
//              Prefetch()          (the worker samples and stages batch k+1)
//              train on batch k
//              SendPriorities(k)   (queued behind the sample of batch k+1)
//
// Measured (bench/replay_feed_bench, README "Replay feed"): a synchronous
// priority update took 0.7-0.9 ms of every 5 ms update at GPU pace, and a
// thread started per prefetch ~17 us; with both on this one worker the
// learner's thread only trains.
//
// Thread-safety: one training thread calls the public methods; the worker is
// internal and joined in the destructor, after the tasks already queued.

#include <cstdint>
#include <exception>
#include <future>
#include <optional>
#include <vector>

#include "common/thread_annotations.h"
#include "common/worker_thread.h"
#include "learner/apex/device_copies.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm::learner {

class ReplayFeed {
 public:
  ReplayFeed(replay::ReplaySampler& sampler, const BatchStager& stager);
  // Runs what is queued (the priorities still to send), then stops.
  ~ReplayFeed() = default;
  ReplayFeed(const ReplayFeed&) = delete;
  ReplayFeed& operator=(const ReplayFeed&) = delete;

  // Queues the sampling and staging of one batch of `size`; the future
  // carries the batch or the sampler's error (DeadlineExceeded,
  // Unavailable). Never blocks. `draw_seed`: ReplaySampler::Sample's.
  std::future<StagedBatch> Prefetch(int64_t size, std::optional<uint64_t> draw_seed = std::nullopt);
  // Queues a priority update. Never blocks. An error of an earlier update
  // (InvalidArgument: a NaN priority) is rethrown here or by Drain(), on
  // the training thread.
  void SendPriorities(std::vector<uint64_t> keys, std::vector<double> priorities);
  // Blocks until every queued task ran; rethrows a priority update's error.
  void Drain();

 private:
  void RethrowPriorityError() RLSWARM_EXCLUDES(mu_);

  replay::ReplaySampler& sampler_;
  const BatchStager& stager_;
  Mutex mu_;
  std::exception_ptr priority_error_ RLSWARM_GUARDED_BY(mu_);
  WorkerThread worker_;  // last: starts after, and drains before, the rest
};

}  // namespace rlswarm::learner
