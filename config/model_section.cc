#include "config/model_section.h"

#include <cmath>

#include "common/errors.h"
#include "models/continuous_networks.h"
#include "models/model_spec.h"
#include "models/q_networks.h"
#include "models/residual_networks.h"

namespace rlswarm::config {

models::ModelSpec ModelSection::ToSpec(const envs::EnvSpec& env) const {
  if (env.action.kind != envs::ActionKind::kDiscrete) {
    throw InvalidArgument("model: DQN needs discrete actions; " + env.name +
                          " has continuous actions");
  }
  const auto& shape = env.observation.shape;
  const bool residual = torso == "residual";
  if (torso == "nature_cnn") {
    if (shape.size() != 3) {
      throw InvalidArgument("model.torso nature_cnn: needs image stacks [C, H, W]; " + env.name +
                            " has " + std::to_string(shape.size()) + "-D observations");
    }
    models::NatureCnnOptions o;
    o.in_channels = shape[0];
    o.height = shape[1];
    o.width = shape[2];
    o.num_actions = env.action.num_actions;
    o.hidden = minatar_hidden;
    o.dueling = dueling;
    return models::MakeNatureCnnSpec(o);
  }
  if (shape.size() == 1 && residual) {
    models::ResidualMlpOptions o;
    o.input_dim = shape[0];
    o.width = width;
    o.blocks = blocks;
    o.num_actions = env.action.num_actions;
    o.dueling = dueling;
    return models::MakeResidualMlpSpec(o);
  }
  if (shape.size() == 1) {
    models::MlpOptions o;
    o.input_dim = shape[0];
    o.hidden_sizes = hidden_sizes;
    o.num_actions = env.action.num_actions;
    o.dueling = dueling;
    return models::MakeMlpSpec(o);
  }
  if (shape.size() == 3 && shape[0] == shape[1] && residual) {
    models::ResidualConvOptions o;
    o.grid = shape[0];
    o.in_channels = shape[2];
    o.num_actions = env.action.num_actions;
    o.channels = channels;
    o.stages = stages;
    o.blocks_per_stage = blocks_per_stage;
    o.hidden = width;
    o.dueling = dueling;
    o.channels_last_input = true;
    return models::MakeResidualConvSpec(o);
  }
  if (shape.size() == 3 && shape[0] == shape[1]) {
    models::MinAtarOptions o;
    o.grid = shape[0];
    o.in_channels = shape[2];
    o.num_actions = env.action.num_actions;
    o.conv_filters = conv_filters;
    o.hidden = minatar_hidden;
    o.dueling = dueling;
    o.channels_last_input = true;
    return models::MakeMinAtarSpec(o);
  }
  throw InvalidArgument("model: no network for observations of shape " +
                        std::to_string(shape.size()) + "-D in " + env.name);
}

models::Td3Specs ModelSection::ToTd3Specs(const envs::EnvSpec& env) const {
  if (env.action.kind != envs::ActionKind::kContinuous) {
    throw InvalidArgument("model: TD3 needs continuous actions; " + env.name +
                          " has discrete actions (learner.algorithm: dqn)");
  }
  if (env.observation.shape.size() != 1) {
    throw InvalidArgument("model: TD3's networks are MLPs; " + env.name +
                          " has observations that are not vectors");
  }
  const std::int64_t dim = env.action.array.NumElements();
  models::DeterministicPolicyOptions policy;
  policy.observation_dim = env.observation.shape[0];
  policy.action_dim = dim;
  policy.hidden_sizes = hidden_sizes;
  policy.action_low.clear();
  policy.action_high.clear();
  for (std::int64_t i = 0; i < dim; ++i) {
    const double low = env.action.array.Low(i), high = env.action.array.High(i);
    if (!std::isfinite(low) || !std::isfinite(high)) {
      throw InvalidArgument("model: TD3 needs bounded actions; " + env.name + "'s are not");
    }
    policy.action_low.push_back(static_cast<float>(low));
    policy.action_high.push_back(static_cast<float>(high));
  }
  models::TwinCriticOptions critic;
  critic.observation_dim = policy.observation_dim;
  critic.action_dim = dim;
  critic.hidden_sizes = hidden_sizes;
  return {models::MakeDeterministicPolicySpec(policy), models::MakeTwinCriticSpec(critic)};
}

}  // namespace rlswarm::config
