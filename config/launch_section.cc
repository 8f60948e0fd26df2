#include "config/launch_section.h"

#include <arpa/inet.h>

namespace rlswarm::config {

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
  // A numeric address only: a name could resolve to more interfaces than
  // the user meant to expose.
  in6_addr parsed{};
  if (inet_pton(AF_INET, metrics_bind.c_str(), &parsed) != 1 &&
      inet_pton(AF_INET6, metrics_bind.c_str(), &parsed) != 1) {
    throw ConfigError(where + "metrics_bind '" + metrics_bind +
                      "' is not an IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)");
  }
  if (eval_num_envs > eval_episodes) {
    throw ConfigError(where + "eval_num_envs (" + std::to_string(eval_num_envs) +
                      ") exceeds eval_episodes (" + std::to_string(eval_episodes) + ")");
  }
}

}  // namespace rlswarm::config
