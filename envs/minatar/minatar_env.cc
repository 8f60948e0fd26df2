#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

EnvSpec MinAtarSpec(const std::string& name, int channels, int num_actions,
                    std::int64_t max_episode_steps) {
  EnvSpec spec;
  spec.name = name;
  spec.observation = {{kGridSize, kGridSize, channels}, DType::kBool, {0.0}, {1.0}};
  spec.action.kind = ActionKind::kDiscrete;
  spec.action.num_actions = num_actions;
  spec.action.array = {{}, DType::kInt64, {0.0}, {static_cast<double>(num_actions - 1)}};
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace rlswarm::envs::minatar
