// RunHealthScenario (harness.h): the training-health metrics of Step() on a
// real group, for step_health_test.cc.

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

void RunHealthScenario(ShardedModel& model, int rank, int world_size, const std::string& dir) {
  const models::ModelSpec& spec = model.spec();
  const int64_t share = kGlobalBatch / world_size;
  auto backward = [&](int step) {
    auto [x, y] = GlobalBatch(spec, step);
    model.ZeroGrad();
    at::Tensor q = model.Forward(x.narrow(0, rank * share, share));
    at::Tensor target = y.narrow(0, rank * share, share).to(q.scalar_type());
    (q - target).pow(2).mean().backward();
  };
  auto save_params = [&](int k) {
    models::NamedTensors full = model.FullParameters();  // collective: every rank
    if (rank == 0) WriteDoubles(dir + "/health_params" + std::to_string(k) + ".bin", Flatten(full));
  };
  std::vector<double> out;
  save_params(0);
  backward(0);
  model.Step();
  out.push_back(model.health().grad_norm);
  save_params(1);
  backward(1);
  model.Step();
  out.push_back(model.health().update_to_weight);
  out.push_back(static_cast<double>(model.health().update_to_weight_step));
  save_params(2);

  // Step 2: one NaN in the last rank's gradient shard only.
  backward(2);
  if (rank == world_size - 1) model.LocalGrad()[0] = NAN;
  const at::Tensor shard_before = model.LocalShard().clone();
  const std::vector<double> state_before = Flatten(model.optimizer().State());
  model.Step();
  out.push_back(model.health().skipped ? 1 : 0);
  out.push_back(static_cast<double>(model.health().skipped_steps));
  const bool unchanged = at::equal(shard_before, model.LocalShard()) &&
                         state_before == Flatten(model.optimizer().State());
  out.push_back(unchanged ? 1 : 0);
  save_params(3);

  backward(3);
  model.Step();
  out.push_back(model.health().skipped ? 1 : 0);
  out.push_back(static_cast<double>(model.health().skipped_steps));
  out.push_back(static_cast<double>(model.optimizer().step()));
  save_params(4);
  WriteDoubles(dir + "/health.rank" + std::to_string(rank) + ".bin", out);
}

}  // namespace rlswarm::learner::testing
