#include <ATen/ATen.h>

#include "common/random.h"
#include "learner/testing/td3_case.h"
#include "models/continuous_networks.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

std::unique_ptr<Td3Trainer> MakeTd3Trainer(ShardMesh mesh) {
  Td3Options o;
  for (ShardedModelOptions* m : {&o.actor, &o.critic}) {
    m->sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
    m->optimizer.kind = OptimizerKind::kAdam;
    m->optimizer.lr = 1e-2;
    m->optimizer.max_grad_norm = 10;
  }
  o.actor.seed = 21;
  o.critic.seed = 22;
  o.noise_seed = 23;
  o.target_tau = 0.1;
  const models::ModelSpec actor = models::MakeDeterministicPolicySpec({.observation_dim = 3,
                                                                       .action_dim = 1,
                                                                       .hidden_sizes = {16, 12},
                                                                       .action_low = {-2.0f},
                                                                       .action_high = {2.0f}});
  const models::ModelSpec critic =
      models::MakeTwinCriticSpec({.observation_dim = 3, .action_dim = 1, .hidden_sizes = {16, 12}});
  ActionBounds bounds{at::full({1}, -2.0, at::kDouble), at::full({1}, 2.0, at::kDouble)};
  return std::make_unique<Td3Trainer>(actor, critic, bounds, o, std::move(mesh));
}

Td3Batch Td3GlobalBatch(int64_t update) {
  Rng rng(DeriveSeed(99, static_cast<uint64_t>(update)));
  auto uniform = [&](std::vector<int64_t> shape, double low, double high) {
    at::Tensor t = at::empty(shape, at::kDouble);
    double* p = t.data_ptr<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.Uniform(low, high);
    return t;
  };
  Td3Batch b;
  b.observation = uniform({kTd3GlobalBatch, 3}, -1, 1);
  b.action = uniform({kTd3GlobalBatch, 1}, -2, 2);
  b.next_observation = uniform({kTd3GlobalBatch, 3}, -1, 1);
  // Pendulum-like cost: the observation's distance from upright and the torque.
  b.reward = -(b.observation.pow(2).sum(1) + 0.1 * b.action.pow(2).reshape(-1));
  b.discount = at::full({kTd3GlobalBatch}, 0.99, at::kDouble);
  b.weights = uniform({kTd3GlobalBatch}, 0.5, 1);
  return b;
}

Td3Batch Td3RankRows(const Td3Batch& g, int rank, int world_size) {
  const int64_t rows = kTd3GlobalBatch / world_size;
  auto part = [&](const at::Tensor& t) { return t.narrow(0, rank * rows, rows); };
  return {part(g.observation), part(g.action),           part(g.reward),
          part(g.discount),    part(g.next_observation), part(g.weights)};
}

void TrainTd3(Td3Trainer& trainer, int rank, int world_size) {
  for (int u = 1; u <= kTd3Updates; ++u) {
    trainer.TrainOn(Td3RankRows(Td3GlobalBatch(u), rank, world_size), u);
  }
}

std::array<std::string, 4> Td3NetworkNames() {
  return {"actor", "critic", "actor_target", "critic_target"};
}

std::array<models::NamedTensors, 4> Td3FullParameters(Td3Trainer& trainer) {
  return {trainer.actor().FullParameters(), trainer.critic().FullParameters(),
          trainer.actor_target().FullParameters(), trainer.critic_target().FullParameters()};
}

void RunTd3Scenario(std::shared_ptr<Communicator> comm, const std::string& dir) {
  const int rank = comm->rank(), world = comm->world_size();
  std::unique_ptr<Td3Trainer> trainer = MakeTd3Trainer(ShardMesh::OneDim(comm));
  TrainTd3(*trainer, rank, world);
  const std::array<models::NamedTensors, 4> params = Td3FullParameters(*trainer);
  if (rank != 0) return;
  for (size_t i = 0; i < params.size(); ++i) {
    WriteDoubles(dir + "/td3_" + Td3NetworkNames()[i] + ".bin", Flatten(params[i]));
  }
}

}  // namespace rlswarm::learner::testing
