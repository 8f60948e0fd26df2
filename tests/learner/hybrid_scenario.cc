// The hybrid_shard scenario (hybrid_training_test.cc): every rank builds
// the 2-D mesh of each shard group size in HybridRuns(world), trains that
// run's cases for kSteps on its share of each global batch, and writes
//   <dir>/<case>_g<G>.bin             rank 0: FullParameters() after training
//   <dir>/<case>_g<G>.rank<r>.state   the local shard and optimizer state
//   <dir>/<case>_g<G>.rank<r>.norms   health().grad_norm of every step
//   <dir>/<case>_g<G>.rank<r>.txt     "target_ok shard_index shard_count
//                                      rejects_full_shard checkpoint_ok"
// and, for the checkpointed case, <dir>/ckpt_g<G>/ (see HybridRun).

#include <ATen/ATen.h>

#include <fstream>

#include "common/errors.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/dist/rendezvous.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {
namespace {

std::vector<double> LocalState(ShardedModel& model) {
  std::vector<double> out = Flatten({{"shard", model.LocalShard()}});
  std::vector<double> opt = Flatten(model.optimizer().State());
  out.insert(out.end(), opt.begin(), opt.end());
  return out;
}

// A full_shard model on a 2-D mesh is a wiring mistake: refused, locally.
int RejectsOtherStrategies(const models::ModelSpec& spec, const TrainCase& c,
                           const ShardMesh& mesh) {
  if (!mesh.two_dim()) return 1;
  ShardedModelOptions options = c.options;
  options.sharding.strategy = ShardingStrategy::kFullShard;
  try {
    ShardedModel wrong(spec, options, mesh);
  } catch (const InvalidArgument&) {
    return 1;
  }
  return 0;
}

// Saves a checkpoint of the trained model and loads it into a fresh one on
// the same mesh: every rank must get back its own shard and optimizer state.
int CheckpointRoundTrip(ShardedModel& model, const ShardMesh& mesh, const models::ModelSpec& spec,
                        const TrainCase& c, const std::string& root) {
  std::unique_ptr<ShardedModel> target = model.MakeTarget();
  SaveCheckpoint(root, model, target.get(), {kSteps, c.options.seed}, /*keep=*/1);
  // SaveCheckpoint returns on ranks > 0 before rank 0 has written the
  // manifest; a resume happens after every rank saved.
  model.communicator().ControlAllReduceSum(at::zeros({1}), "checkpoint written");
  ShardedModel loaded(spec, c.options, mesh);
  std::unique_ptr<ShardedModel> loaded_target = loaded.MakeTarget();
  std::optional<std::string> dir = FindLatestCheckpoint(root);
  if (!dir) return 0;
  LoadCheckpoint(*dir, loaded, loaded_target.get());
  return LocalState(loaded) == LocalState(model) &&
         at::equal(loaded_target->LocalShard(), target->LocalShard());
}

}  // namespace

std::vector<HybridRun> HybridRuns(int world_size) {
  if (world_size == 4) {
    return {{2,
             {"hybrid", "hybrid_clipped", "hybrid_wrap_2_1_allreduce", "hybrid_minatar_rmsprop"},
             "hybrid_clipped"},
            {1, {"hybrid", "hybrid_clipped"}, ""},
            {4, {"hybrid"}, ""}};
  }
  if (world_size == 6)
    return {{2, {"hybrid_clipped"}, "hybrid_clipped"}, {3, {"hybrid_clipped"}, ""}};
  return {};
}

TrainCase HybridCase(const std::string& name) {
  TrainCase c;
  c.name = name;
  c.options.seed = 7;
  c.options.sharding.strategy = ShardingStrategy::kHybridShard;
  c.options.sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
  c.options.optimizer.lr = 1e-2;
  if (name == "hybrid_clipped") {
    // Clipping reads the global norm: counting each replica's shards would
    // clip harder and the parameters would not match.
    c.options.optimizer.max_grad_norm = 0.05;
  } else if (name == "hybrid_wrap_2_1_allreduce") {
    c.options.sharding.layers_per_unit = {2, 1};
    c.options.sharding.reduce_scatter = ReduceScatterImpl::kAllReduce;
  } else if (name == "hybrid_minatar_rmsprop") {
    c.model = "minatar";
    c.options.optimizer.kind = OptimizerKind::kRmsProp;
    c.options.optimizer.max_grad_norm = 0.5;
  } else if (name != "hybrid") {
    throw InvalidArgument("no hybrid case " + name);
  }
  return c;
}

std::vector<double> TrainAndRecordNorms(ShardedModel& model, const models::ModelSpec& spec,
                                        int rank, int world_size) {
  const int64_t share = kGlobalBatch / world_size;
  std::vector<double> norms;
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = GlobalBatch(spec, step);
    at::Tensor q = model.Forward(x.narrow(0, rank * share, share));
    at::Tensor target = y.narrow(0, rank * share, share).to(q.scalar_type());
    model.ZeroGrad();
    (q - target).pow(2).mean().backward();
    model.Step();
    norms.push_back(model.health().grad_norm);
  }
  return norms;
}

void RunHybridScenario(const ProcessGroupHandle& pg, const std::string& dir) {
  const int rank = pg.rank;
  for (const HybridRun& run : HybridRuns(pg.world_size)) {
    const ShardMesh mesh = MakeShardMesh(pg, run.shard_group_size);
    const std::string g = "_g" + std::to_string(run.shard_group_size);
    for (const std::string& name : run.cases) {
      const TrainCase c = HybridCase(name);
      const models::ModelSpec spec = CaseSpec(c.model);
      ShardedModel model(spec, c.options, mesh);
      const std::vector<double> norms = TrainAndRecordNorms(model, spec, rank, pg.world_size);
      const models::NamedTensors full = model.FullParameters();
      const std::string base = dir + "/" + name + g;
      if (rank == 0) WriteDoubles(base + ".bin", Flatten(full));
      const std::string mine = base + ".rank" + std::to_string(rank);
      WriteDoubles(mine + ".state", LocalState(model));
      WriteDoubles(mine + ".norms", norms);
      int target_ok = 1;
      {
        std::unique_ptr<ShardedModel> target = model.MakeTarget();
        auto [x, y] = GlobalBatch(spec, 0);
        at::NoGradGuard no_grad;
        target_ok = at::equal(target->Forward(x), model.Forward(x));
      }
      const int rejects = RejectsOtherStrategies(spec, c, mesh);
      const int checkpoint_ok = name == run.checkpointed
                                    ? CheckpointRoundTrip(model, mesh, spec, c, dir + "/ckpt" + g)
                                    : 1;
      std::ofstream(mine + ".txt")
          << target_ok << " " << model.shard_index() << " " << model.shard_count() << " " << rejects
          << " " << checkpoint_ok << "\n";
    }
  }
}

}  // namespace rlswarm::learner::testing
