#pragma once

// Options of the Ape-X learner (apex_learner.h) and of the algorithm it
// trains (learner_algorithm.h: dqn or td3). config/learner_section.h fills
// them from the `learner` section of an experiment config.

#include <chrono>
#include <cstdint>
#include <string>

#include "learner/dqn_loss.h"
#include "learner/sharded_model.h"
#include "learner/td3_loss.h"
#include "learner/weights_broadcaster.h"
#include "replay/service/replay_sampler.h"

namespace rlswarm::learner {

struct LearnerOptions {
  // The global batch: each of the W ranks draws batch_size / W items.
  int64_t batch_size = 128;
  // Sharding, optimizer (kind, lr, max_grad_norm), init seed, device: of
  // the Q-network (dqn), of the critics and, with policy_lr, the policy (td3).
  ShardedModelOptions model;
  DqnLossOptions loss;
  // td3 (td3_trainer.h): target policy smoothing, a policy update every
  // policy_delay updates at policy_lr (0 = model.optimizer.lr); the
  // policy starts from model.seed, the critics from model.seed + 1
  // (config/learner_factory.cc), as actors' networks do.
  Td3LossOptions td3_loss;
  int64_t policy_delay = 2;
  double policy_lr = 0;
  // Target network(s): Polyak averaging with this tau after every update when
  // > 0; otherwise a hard copy every target_update_interval updates.
  // docs/baselines.md: tau 0.01 or a copy every ~100 updates.
  double target_tau = 0.01;
  int64_t target_update_interval = 100;
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

  // Throws InvalidArgument: batch_size not divisible by world_size, tau
  // outside [0, 1], tau == 0 with target_update_interval < 1, negative
  // intervals, bad member options.
  void Validate(int world_size) const;
};

}  // namespace rlswarm::learner
