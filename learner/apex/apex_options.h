#pragma once

// The Ape-X learner loop's own options (apex_learner.h); each algorithm it
// trains owns its options (learner/algorithms/). config/learner_section.h
// fills both from the `learner` section of an experiment config.

#include <chrono>
#include <cstdint>
#include <string>

#include "learner/apex/weights_broadcaster.h"
#include "learner/fsdp/sharded_model.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm::learner {

struct ApeXOptions {
  // The global batch: each of the W ranks draws batch_size / W items.
  int64_t batch_size = 128;
  // Sharding, optimizer (kind, lr, max_grad_norm), init seed and device of
  // the networks: the algorithm builds its networks from them, the loop
  // stages batches on model.device and records model.seed in checkpoints.
  ShardedModelOptions model;
  // Publish the weights every this many updates; 0 = never.
  int64_t publish_interval = 10;
  WeightsPublishingOptions publishing;
  // Where checkpoints go ("" = none) and every how many updates (0 = only
  // when asked, e.g. on SIGTERM); complete checkpoints kept.
  std::string checkpoint_dir;
  int64_t checkpoint_interval = 0;
  int keep_checkpoints = 2;
  // Periodic checkpoints (checkpoint_interval) are asynchronous: training
  // pauses only to copy the shards to host memory, a writer thread makes
  // them durable (async_checkpoint.h). At world size > 1 that needs the
  // rendezvous store (DqnLearner's `store`); without one, or when false,
  // they are written synchronously (checkpoint.h).
  bool async_checkpoint = true;
  // The replay shards. The seed is mixed with the rank (and the update count
  // on resume) so that ranks draw different items.
  replay::ReplaySamplerOptions sampler;
  // Sample the next batch on a helper thread while the current one trains
  // (as Ape-X's learner does): hides the replay round trip; the priorities
  // of update k then reach replay after batch k + 1 was drawn.
  bool replay_prefetch = true;
  // Send each batch's new priorities (|TD| + epsilon) back to replay. Off
  // for uniform tables, where nobody reads them: saves one round trip per
  // update.
  bool update_priorities = true;
  // Metrics are logged (spdlog, info) this often; 0 = never.
  std::chrono::milliseconds log_interval{10000};

  // Throws InvalidArgument: batch_size not divisible by world_size,
  // negative intervals, an untrainable model.
  void Validate(int world_size) const;
};

}  // namespace rlswarm::learner
