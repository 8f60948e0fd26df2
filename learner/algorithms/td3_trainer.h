#pragma once

// Td3Trainer: the networks and the update of TD3 (td3_loss.h) on this rank's
// share of a batch, all four networks sharded like the DQN learner's
// (ShardedModel, any strategy): the deterministic policy mu, its target, the
// twin critics (one model, models/continuous_networks.h) and their target.
//
// One update (Fujimoto et al. 2018, Algorithm 1):
//   critic: a' = smoothed mu_target(s'); y from the target critics at (s', a');
//           one step of the critics on td3_loss's critic loss
//   every policy_delay updates: one step of mu on -Q1(s, mu(s)) (the
//           gradient flows through the critics, whose own gradient of that
//           loss is discarded), then Polyak updates of both targets.
// The smoothing noise of update u is drawn for the whole global batch from
// a generator seeded by (noise_seed, u) and each rank takes its rows, so the
// result does not depend on the world size (the equivalence test) and a
// resumed run draws what an uninterrupted one would.
//
// Collective: every rank calls TrainOn with the same update number, in the
// same order. Not thread-safe.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "learner/algorithms/td3_loss.h"
#include "learner/dist/shard_mesh.h"
#include "learner/fsdp/sharded_model.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

struct Td3Options {
  Td3LossOptions loss;
  int64_t policy_delay = 2;   // critic updates per policy (and target) update
  double target_tau = 0.005;  // Polyak factor of both targets
  ShardedModelOptions actor;  // optimizer, sharding, seed, device of mu
  ShardedModelOptions critic;
  uint64_t noise_seed = 0;
  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

// This rank's rows of a batch, on any device (moved to the models').
struct Td3Batch {
  at::Tensor observation;       // [B, O]
  at::Tensor action;            // [B, A]
  at::Tensor reward;            // [B]
  at::Tensor discount;          // [B]
  at::Tensor next_observation;  // [B, O]
  at::Tensor weights;           // [B] IS weights; undefined = all 1
};

struct Td3StepMetrics {
  double critic_loss = 0;
  double mean_abs_td = 0;
  bool policy_updated = false;
  double actor_loss = 0;  // of the last policy update
};

class Td3Trainer {
 public:
  // `bounds`: the env's action bounds ([A] each). `mesh.world`: the ranks
  // that share a batch (rank r holds rows [r * B, (r + 1) * B) of it).
  Td3Trainer(models::ModelSpec actor_spec, models::ModelSpec critic_spec, ActionBounds bounds,
             Td3Options options, ShardMesh mesh);
  ~Td3Trainer();

  // Update number `update` (1-based) on this rank's rows; returns their new
  // priorities. Collective.
  std::vector<double> TrainOn(const Td3Batch& batch, int64_t update);

  const Td3StepMetrics& last_step() const { return last_; }
  ShardedModel& actor() { return *actor_; }
  ShardedModel& actor_target() { return *actor_target_; }
  ShardedModel& critic() { return *critic_; }
  ShardedModel& critic_target() { return *critic_target_; }

 private:
  at::Tensor SmoothingNoise(int64_t rows, int64_t action_dim, int64_t update) const;

  Td3Options options_;
  ShardMesh mesh_;
  ActionBounds bounds_;
  std::unique_ptr<ShardedModel> actor_, actor_target_, critic_, critic_target_;
  double last_actor_loss_ = 0;
  Td3StepMetrics last_;
};

}  // namespace rlswarm::learner
