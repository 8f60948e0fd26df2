#include "config/learner_factory.h"

#include <ATen/ATen.h>

#include "common/random.h"
#include "learner/dqn_learner.h"
#include "learner/td3_algorithm.h"
#include "models/continuous_networks.h"

namespace rlswarm::config {
namespace {

learner::Td3Options Td3OptionsOf(const learner::LearnerOptions& o) {
  learner::Td3Options td3;
  td3.loss = o.td3_loss;
  td3.policy_delay = o.policy_delay;
  td3.target_tau = o.target_tau;
  td3.critic = o.model;
  td3.critic.seed = o.model.seed + 1;
  td3.actor = o.model;
  if (o.policy_lr > 0) td3.actor.optimizer.lr = o.policy_lr;
  // The same on every rank: each takes its rows of the global batch's noise.
  td3.noise_seed = DeriveSeed(o.model.seed, 0x7d3);
  return td3;
}

}  // namespace

std::unique_ptr<learner::ApeXLearner> MakeLearner(const ExperimentConfig& config,
                                                  learner::LearnerOptions options,
                                                  learner::ShardMesh mesh,
                                                  c10::intrusive_ptr<c10d::Store> store) {
  if (config.learner.algorithm != "td3") {
    return std::make_unique<learner::DqnLearner>(config.ModelSpec(), std::move(options),
                                                 std::move(mesh), std::move(store));
  }
  const envs::EnvSpec env = envs::DescribeEnv(config.env.name, config.env.ToEnvOptions());
  models::Td3Specs specs = config.model.ToTd3Specs(env);
  const int64_t dim = env.action.array.NumElements();
  learner::ActionBounds bounds{at::empty({dim}, at::kDouble), at::empty({dim}, at::kDouble)};
  for (int64_t i = 0; i < dim; ++i) {
    bounds.low[i] = env.action.array.Low(i);
    bounds.high[i] = env.action.array.High(i);
  }
  const learner::Td3Options td3 = Td3OptionsOf(options);
  return std::make_unique<learner::ApeXLearner>(
      [&](const learner::ShardMesh& m) {
        return std::make_unique<learner::Td3Algorithm>(std::move(specs.policy),
                                                       std::move(specs.critic), bounds, td3, m);
      },
      std::move(options), std::move(mesh), std::move(store));
}

}  // namespace rlswarm::config
