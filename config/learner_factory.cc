#include "config/learner_factory.h"

#include <ATen/ATen.h>

#include "learner/algorithms/dqn_learner.h"
#include "learner/algorithms/td3_algorithm.h"
#include "models/continuous_networks.h"

namespace rlswarm::config {

std::unique_ptr<learner::ApeXLearner> MakeLearner(const ExperimentConfig& config,
                                                  learner::ApeXOptions options,
                                                  learner::ShardMesh mesh,
                                                  c10::intrusive_ptr<c10d::Store> store) {
  if (config.learner.algorithm != "td3") {
    learner::DqnOptions dqn = config.learner.ToDqnOptions();
    return std::make_unique<learner::DqnLearner>(config.ModelSpec(), std::move(options),
                                                 std::move(dqn), std::move(mesh), std::move(store));
  }
  const envs::EnvSpec env = envs::DescribeEnv(config.env.name, config.env.ToEnvOptions());
  models::Td3Specs specs = config.model.ToTd3Specs(env);
  const int64_t dim = env.action.array.NumElements();
  learner::ActionBounds bounds{at::empty({dim}, at::kDouble), at::empty({dim}, at::kDouble)};
  for (int64_t i = 0; i < dim; ++i) {
    bounds.low[i] = env.action.array.Low(i);
    bounds.high[i] = env.action.array.High(i);
  }
  const learner::Td3Options td3 = config.learner.ToTd3Options(options.model);
  return std::make_unique<learner::ApeXLearner>(
      [&](const learner::ShardMesh& m) {
        return std::make_unique<learner::Td3Algorithm>(std::move(specs.policy),
                                                       std::move(specs.critic), bounds, td3, m);
      },
      std::move(options), std::move(mesh), std::move(store));
}

}  // namespace rlswarm::config
