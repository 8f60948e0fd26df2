// The trace scenario (trace_recorder_test.cc): two warm-up updates of the
// MLP, then one traced update (TraceOneUpdate) per strategy; rank 0 writes
// the merged Chrome traces to <dir>/trace_<case>.json.

#include <ATen/ATen.h>

#include "learner/dist/trace_update.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

void RunTraceScenario(std::shared_ptr<Communicator> comm, int rank, int world_size,
                      const std::string& dir) {
  const int64_t share = kGlobalBatch / world_size;
  for (const char* name : {"full_shard", "shard_grad_op", "full_shard_checkpointed"}) {
    ShardedModelOptions options;
    options.sharding.strategy = std::string(name) == "shard_grad_op"
                                    ? ShardingStrategy::kShardGradOp
                                    : ShardingStrategy::kFullShard;
    options.sharding.activation_checkpointing = std::string(name) == "full_shard_checkpointed";
    models::ModelSpec spec = CaseSpec("mlp");
    ShardedModel model(spec, options, comm);
    auto update = [&](int step) {
      auto [x, y] = GlobalBatch(spec, step);
      at::Tensor q = model.Forward(x.narrow(0, rank * share, share).to(at::kFloat));
      model.ZeroGrad();
      at::Tensor loss = [&] {
        TraceScope trace("loss");
        return (q - y.narrow(0, rank * share, share).to(q.scalar_type())).pow(2).mean();
      }();
      {
        TraceScope trace("backward");
        loss.backward();
      }
      model.Step();
    };
    update(0);
    update(1);
    const std::string trace = TraceOneUpdate(*comm, [&] {
      update(2);
      return true;
    });
    if (rank == 0) WriteTraceFile(dir + "/trace_" + name + ".json", trace);
  }
}

}  // namespace rlswarm::learner::testing
