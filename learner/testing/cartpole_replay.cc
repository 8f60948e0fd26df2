#include "learner/testing/cartpole_replay.h"

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "envs/registry.h"
#include "replay/service/transition.h"

namespace rlswarm::learner::testing {

CartPoleReplay::CartPoleReplay(int num_transitions, uint64_t seed, int nan_observations,
                               bool prioritized) {
  replay::ReplayServiceOptions o;
  o.table.name = "replay";
  o.table.signature = replay::TransitionSignature(DType::kFloat32, {4}, DType::kInt64, {});
  o.table.capacity = num_transitions;
  o.table.selector.kind =
      prioritized ? replay::SelectorKind::kPrioritized : replay::SelectorKind::kUniform;
  o.table.selector.alpha = 0.6;
  o.table.selector.beta = 0.4;
  o.table.seed = seed + 1;
  o.server.endpoint = "tcp://127.0.0.1:*";
  service_ = std::make_unique<replay::ReplayService>(std::move(o));
  service_->Start();

  std::unique_ptr<envs::Env> env = envs::MakeEnv("CartPole-v1");
  std::mt19937_64 rng(seed);
  std::vector<float> obs(4 * num_transitions), next(4 * num_transitions);
  std::vector<int64_t> action(num_transitions);
  std::vector<float> reward(num_transitions), discount(num_transitions);
  std::vector<float> current(4);
  auto bytes = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
  env->Reset(seed, bytes(current));
  for (int i = 0; i < num_transitions; ++i) {
    std::copy(current.begin(), current.end(), obs.begin() + 4 * i);
    action[i] = static_cast<int64_t>(rng() % 2);
    const envs::StepResult r = env->Step(action[i], bytes(current));
    std::copy(current.begin(), current.end(), next.begin() + 4 * i);
    reward[i] = r.reward;
    discount[i] = r.terminated ? 0.0f : 0.99f;
    if (r.terminated || r.truncated) env->Reset(std::nullopt, bytes(current));
    if (i < nan_observations) {
      std::fill_n(obs.begin() + 4 * i, 4, std::numeric_limits<float>::quiet_NaN());
    }
  }
  const std::vector<int64_t> n_shape = {num_transitions};
  const std::vector<int64_t> obs_shape = {num_transitions, 4};
  replay::InsertBatch batch;
  batch.fields = {
      {replay::transition::kObservation, DType::kFloat32, obs_shape, std::as_bytes(std::span(obs))},
      {replay::transition::kAction, DType::kInt64, n_shape, std::as_bytes(std::span(action))},
      {replay::transition::kReward, DType::kFloat32, n_shape, std::as_bytes(std::span(reward))},
      {replay::transition::kDiscount, DType::kFloat32, n_shape, std::as_bytes(std::span(discount))},
      {replay::transition::kNextObservation, DType::kFloat32, obs_shape,
       std::as_bytes(std::span(next))}};
  service_->table().Insert(batch);
}

CartPoleReplay::~CartPoleReplay() { service_->Stop(); }

}  // namespace rlswarm::learner::testing
