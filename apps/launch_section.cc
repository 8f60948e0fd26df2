#include "apps/launch_section.h"

namespace rlswarm::apps {

void LaunchSection::Check(const std::string& file) const {
  const std::string where =
      (file.empty() ? std::string("<defaults>") : file) + ": section 'launch': ";
  if (restart_backoff_max_s < restart_backoff_s) {
    throw ConfigError(where + "restart_backoff_max_s is below restart_backoff_s");
  }
  if (episode_return_bound && !target_return) {
    throw ConfigError(where + "episode_return_bound is only used with target_return");
  }
  if (mode == "embedded" && learner_ranks > 1) {
    throw ConfigError(where + "mode embedded runs one learner rank; learner_ranks = " +
                      std::to_string(learner_ranks) + " needs mode processes (or auto)");
  }
  if (eval_num_envs > eval_episodes) {
    throw ConfigError(where + "eval_num_envs (" + std::to_string(eval_num_envs) +
                      ") exceeds eval_episodes (" + std::to_string(eval_episodes) + ")");
  }
}

}  // namespace rlswarm::apps
