// The activation-checkpointing scenario (activation_checkpoint_test.cc):
// every case of ActivationCheckpointCases() trained twice on this rank's
// share of each global batch, without and with
// ShardingOptions::activation_checkpointing. Files, <v> = off | on:
//   <dir>/ac_<case>_<v>.grad.rank<r>.bin   this rank's LocalGrad() after
//                                          step 0's backward
//   <dir>/ac_<case>_<v>.params.bin         (rank 0) the full parameters
//                                          after kSteps Adam steps
//   <dir>/ac_<case>_<v>.bytes.rank<r>.txt  CPU tensor bytes held between
//                                          step 0's forward and backward
//                                          (autograd's saved tensors, the
//                                          output, gathered buffers), and
//                                          the peak over forward + backward,
//                                          both counting only what was
//                                          allocated since the forward began

#include <ATen/ATen.h>

#include <fstream>

#include "learner/testing/counting_allocator.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

std::vector<TrainCase> ActivationCheckpointCases() {
  TrainCase base;
  base.options.seed = 7;
  base.options.sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
  base.options.optimizer.lr = 1e-2;
  std::vector<TrainCase> cases;
  auto add = [&](std::string name, std::string model, ShardingStrategy strategy,
                 int64_t wrap_min_params = 0) {
    TrainCase c = base;
    c.name = std::move(name);
    c.model = std::move(model);
    c.options.sharding.strategy = strategy;
    c.options.sharding.wrap_min_params = wrap_min_params;
    cases.push_back(std::move(c));
  };
  add("mlp_full_shard", "mlp", ShardingStrategy::kFullShard);
  add("mlp_shard_grad_op", "mlp", ShardingStrategy::kShardGradOp);
  add("mlp_no_shard", "mlp", ShardingStrategy::kNoShard);
  add("residual_mlp_full_shard", "residual_mlp", ShardingStrategy::kFullShard);
  // Two uneven units of several layers (see EquivalenceCases).
  add("residual_mlp_shard_grad_op_wrapped", "residual_mlp", ShardingStrategy::kShardGradOp, 100);
  cases.push_back(cases.front());
  cases.back().name = "mlp_full_shard_no_prefetch";
  cases.back().options.sharding.num_to_forward_prefetch = 0;
  cases.back().options.sharding.num_to_backward_prefetch = 0;
  return cases;
}

void RunActivationCheckpointScenario(std::shared_ptr<Communicator> comm, int rank, int world_size,
                                     const std::string& dir) {
  CpuAllocationCounter& counter = CpuAllocationCounter::Installed();
  const int64_t share = kGlobalBatch / world_size;
  for (const TrainCase& base : ActivationCheckpointCases()) {
    for (const bool on : {false, true}) {
      TrainCase c = base;
      c.options.sharding.activation_checkpointing = on;
      const std::string prefix = dir + "/ac_" + c.name + (on ? "_on" : "_off");
      models::ModelSpec spec = CaseSpec(c.model);
      ShardedModel model(spec, c.options, comm);
      for (int step = 0; step < kSteps; ++step) {
        auto [x, y] = GlobalBatch(spec, step);
        at::Tensor input = x.narrow(0, rank * share, share);
        at::Tensor target = y.narrow(0, rank * share, share);
        model.ZeroGrad();
        const int64_t spare_before = model.SpareGatheredBytes();
        counter.Mark();
        at::Tensor q = model.Forward(input);
        // What forward left for backward, without the gathered units' memory
        // kept for reuse (the same with and without checkpointing).
        const int64_t held = counter.held_bytes() - (model.SpareGatheredBytes() - spare_before);
        (q - target).pow(2).mean().backward();
        const int64_t peak = counter.peak_bytes();
        if (step == 0) {
          std::ofstream(prefix + ".bytes.rank" + std::to_string(rank) + ".txt")
              << held << " " << peak << "\n";
          at::Tensor grad = model.LocalGrad().to(at::kDouble).contiguous();
          WriteDoubles(
              prefix + ".grad.rank" + std::to_string(rank) + ".bin",
              std::vector<double>(grad.data_ptr<double>(), grad.data_ptr<double>() + grad.numel()));
        }
        model.Step();
      }
      models::NamedTensors full = model.FullParameters();
      if (rank == 0) WriteDoubles(prefix + ".params.bin", Flatten(full));
    }
  }
}

}  // namespace rlswarm::learner::testing
