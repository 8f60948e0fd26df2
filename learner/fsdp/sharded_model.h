#pragma once

// A Q-network trained on N ranks with parameters, gradients and optimizer
// state sharded 1/N per rank (FSDP / ZeRO-3), on a c10d ProcessGroup.
//
// Layers of the ModelSpec are grouped into units (ShardingOptions wrapping);
// each unit is one zero-padded flat buffer split evenly over ranks
// (shard_layout.h). A rank keeps only its shards, all in one flat local
// buffer (LocalShard()), with the gradient in a second one (LocalGrad()), so
// the optimizer and the target-network update are a few tensor ops on the
// whole rank's state. See gathered_units.h for the forward/backward data
// path and learner/README.md for the strategies and their costs.
//
// At world size 1, and for no_shard, the layers run directly on views of the
// local buffer (no copy, no collective), so a 1-rank model costs what plain
// LibTorch costs.
//
// hybrid_shard runs on a 2-D ShardMesh (shard_mesh.h): everything above
// happens within the rank's shard group of G ranks (N = G), and each unit's
// reduce-scattered gradient shard is then all-reduced over the replica
// group, so the R = W / G replicas of a shard stay identical.
//
// Collective contract: Forward() (sharded strategies), backward through its
// output, Step(), FullParameters() are collectives: every rank must call them
// in the same order with the same models. A rank that died or stalls makes
// the others throw Unavailable or DeadlineExceeded within the group's
// timeout.
//
// Not thread-safe: one thread drives a ShardedModel. The model must outlive
// backward through any output it produced. Double backward is unsupported.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "learner/dist/communicator.h"
#include "learner/dist/shard_mesh.h"
#include "learner/fsdp/activation_checkpoint.h"
#include "learner/fsdp/flat_optimizer.h"
#include "learner/fsdp/shard_layout.h"
#include "learner/fsdp/sharding_options.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

struct ShardRuntime;

// What Step() found, global over all ranks' shards (every rank holds the
// same values): the training-health metrics of an update.
struct StepHealth {
  // L2 norm of the whole model's gradient before clipping, as
  // torch::nn::utils::clip_grad_norm_ returns it; NaN or Inf when a rank's
  // gradient shard held a non-finite value.
  double grad_norm = 0;
  // The last Step() skipped the optimizer step: a rank's gradient shard held
  // NaN or Inf. Parameters and optimizer state are then unchanged.
  bool skipped = false;
  int64_t skipped_steps = 0;  // Step() calls skipped since construction
  // ||theta_after - theta_before|| / ||theta_before|| of optimizer step
  // number update_to_weight_step (FlatOptimizer::step()); 0 while none is
  // known. It lags one Step(): the update's squared norm rides in the next
  // Step()'s all-reduce, so an update costs one collective, not two.
  double update_to_weight = 0;
  int64_t update_to_weight_step = 0;
};

struct ShardedModelOptions {
  ShardingOptions sharding;
  OptimizerOptions optimizer;
  uint64_t seed = 0;  // models::InitParam, the same on every rank
  at::Device device = at::kCPU;
  // false: no gradients and no optimizer state (a target network).
  bool trainable = true;

  // Throws InvalidArgument (see the member options' Validate).
  void Validate(const models::ModelSpec& spec) const;
};

// Tensor bytes a rank holds between updates.
struct StateBytes {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t Total() const { return params + grads + optimizer; }
};

class ShardedModel {
 public:
  // Initialises every unit from options.seed and keeps this rank's shards.
  // Local: issues no collective. `comm` spans every rank (the 1-D mesh).
  ShardedModel(models::ModelSpec spec, ShardedModelOptions options,
               std::shared_ptr<Communicator> comm);
  // On `mesh`; a 2-D mesh needs ShardingStrategy::kHybridShard (throws
  // InvalidArgument otherwise, or when the mesh does not validate).
  ShardedModel(models::ModelSpec spec, ShardedModelOptions options, ShardMesh mesh);
  ~ShardedModel();
  ShardedModel(const ShardedModel&) = delete;
  ShardedModel& operator=(const ShardedModel&) = delete;

  // input [B, sample_shape...] -> Q-values [B, num_actions] in the param
  // dtype. Autograd-capable when grad mode is on and the model is trainable;
  // backward through the output reduce-scatters into LocalGrad(). Each
  // rank's loss should be the mean over its own share of the global batch.
  at::Tensor Forward(const at::Tensor& input);
  // Forward issues no collective (one rank without a group, or no_shard:
  // every rank holds the whole model), so a second forward costs only its
  // compute.
  bool ForwardIsLocal() const { return direct_; }

  void ZeroGrad();
  // no_shard: all-reduces gradients. Then one all-reduce of four doubles
  // (sharded strategies; none on the direct path, where every rank holds the
  // whole gradient): this shard's squared gradient norm, squared weight
  // norm, a non-finite flag and the previous update's squared norm. If any
  // rank's gradient is non-finite every rank skips the optimizer step;
  // otherwise it clips by the global norm and steps the optimizer on the
  // local shard. Collective. Throws FailedPrecondition if not trainable.
  // hybrid_shard: the all-reduce runs over the shard group only (the
  // replicas hold identical shards, so the group's sums are the global ones
  // and counting the replicas would multiply them by R).
  void Step();
  // What the last Step() found (see StepHealth).
  const StepHealth& health() const { return health_; }
  // Global gradient norm seen by the last Step() (before clipping).
  double last_grad_norm() const { return health_.grad_norm; }

  // Gathers the full parameters, named as models::ParameterNames, in the
  // master dtype. Collective; every rank gets the full set.
  models::NamedTensors FullParameters();
  // Takes this rank's slices of full parameters (e.g. from an unsharded
  // checkpoint). Local. Throws InvalidArgument on missing names or shapes.
  void LoadFullParameters(const models::NamedTensors& named);

  // Which slice of each unit this rank holds (its rank in the shard group;
  // 0 on the direct path), and of how many. Under hybrid_shard ranks r and
  // r + G hold the same shard, so checkpoints and published parts take
  // shard s from world rank s (the first shard group).
  int shard_index() const { return direct_ ? 0 : shard_comm_->rank(); }
  int shard_count() const { return direct_ ? 1 : shard_comm_->world_size(); }

  // This rank's shards of all units, concatenated in unit order (master
  // dtype, padding included and zero), and their gradient. For checkpoints:
  // layouts() says where each parameter's slice is.
  at::Tensor LocalShard() const { return local_flat_; }
  // LocalGrad() first completes the gradient reductions still in flight.
  at::Tensor LocalGrad() const;
  const std::vector<UnitLayout>& layouts() const;
  // Throws FailedPrecondition if not trainable.
  FlatOptimizer& optimizer();

  // A non-trainable copy with the same layout (a sharded target network
  // when this model is sharded). Local.
  std::unique_ptr<ShardedModel> MakeTarget() const;
  // target <- online (hard copy) or target <- tau*online + (1-tau)*target
  // (Polyak). Local: both models have the same layout on every rank.
  void CopyFrom(const ShardedModel& online);
  void PolyakUpdate(const ShardedModel& online, double tau);

  StateBytes LocalStateBytes() const;
  // What 1-process training holds: params + grads + optimizer state in the
  // master dtype, no padding.
  StateBytes UnshardedStateBytes() const;
  // Most bytes of gathered (full) unit parameters held at once since
  // construction or ResetPeak(); the full-size gradient of the unit being
  // reduced comes on top (LargestUnitBytes()).
  int64_t PeakGatheredBytes() const;
  int64_t LargestUnitBytes() const;
  // Memory of freed gathered units kept for the next units to gather into
  // (gathered_units.h: spare buffers), at most the peak gathered at once.
  int64_t SpareGatheredBytes() const;
  void ResetPeak();
  // The training collectives' counts, bytes and times: on a 2-D mesh the sum
  // over the world, shard and replica planes.
  const CommStats& comm_stats() const;
  void ResetCommStats();
  // Every rank (global rank and world size): the control plane, checkpoints.
  Communicator& communicator() { return *comm_; }
  // The planes this model runs on (a 1-D mesh unless hybrid_shard).
  ShardMesh mesh() const { return {comm_, shard_comm_, replica_comm_}; }

  const models::ModelSpec& spec() const { return spec_; }
  const ShardedModelOptions& options() const { return options_; }
  // True when layers run on the local buffer directly (world 1 or no_shard).
  bool direct() const { return direct_; }

 private:
  at::Tensor ForwardDirect(at::Tensor x);
  at::Tensor ForwardSharded(at::Tensor x);
  // Unit u's forward on (input, params): params = {gathered flat buffer}
  // when sharded, else the unit's per-parameter leaves (direct path).
  UnitForward UnitRun(size_t u, bool sharded) const;
  void AllReduceGradients();

  models::ModelSpec spec_;
  ShardedModelOptions options_;
  std::shared_ptr<Communicator> comm_;          // the world
  std::shared_ptr<Communicator> shard_comm_;    // comm_ on a 1-D mesh
  std::shared_ptr<Communicator> replica_comm_;  // null on a 1-D mesh
  mutable CommStats mesh_stats_;                // comm_stats() on a 2-D mesh
  bool direct_ = false;
  std::shared_ptr<ShardRuntime> runtime_;
  at::Tensor local_flat_;  // master dtype, LocalNumel(layouts)
  at::Tensor local_grad_;
  // Direct path: one leaf per parameter, a view of local_flat_ whose .grad
  // is the matching view of local_grad_ (autograd accumulates in place).
  std::vector<std::vector<at::Tensor>> layer_params_;
  std::unique_ptr<FlatOptimizer> optimizer_;
  StepHealth health_;
  // The last applied update's local squared norm (a 0-dim double tensor on
  // the device), reduced by the next Step(); undefined when the last Step()
  // applied none.
  at::Tensor pending_update_sq_;
  double pending_weight_sq_ = 0;  // global ||theta_before||^2 of that update
  int64_t pending_step_ = 0;      // its optimizer step number
};

}  // namespace rlswarm::learner
