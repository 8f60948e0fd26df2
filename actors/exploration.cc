#include "actors/exploration.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace rlswarm::actors {

void ExplorationOptions::Validate() const {
  for (double e : {epsilon, start, end}) {
    if (!(e >= 0 && e <= 1)) {
      throw InvalidArgument("exploration: epsilons must be in [0, 1], got " + std::to_string(e));
    }
  }
  if (!(alpha >= 0) || !std::isfinite(alpha)) {
    throw InvalidArgument("exploration: alpha must be finite and >= 0");
  }
  if (anneal_steps < 1) throw InvalidArgument("exploration: anneal_steps must be >= 1");
}

std::string EpsilonScheduleName(EpsilonSchedule schedule) {
  switch (schedule) {
    case EpsilonSchedule::kApeX:
      return "ape_x";
    case EpsilonSchedule::kFixed:
      return "fixed";
    case EpsilonSchedule::kLinear:
      return "linear";
  }
  return "?";
}

EpsilonSchedule ParseEpsilonSchedule(const std::string& name) {
  if (name == "ape_x") return EpsilonSchedule::kApeX;
  if (name == "fixed") return EpsilonSchedule::kFixed;
  if (name == "linear") return EpsilonSchedule::kLinear;
  throw InvalidArgument("unknown epsilon schedule '" + name + "' (ape_x, fixed, linear)");
}

double Epsilon(const ExplorationOptions& options, std::int64_t actor_id, std::int64_t num_actors,
               std::int64_t env_steps) {
  if (num_actors < 1 || actor_id < 0 || actor_id >= num_actors) {
    throw InvalidArgument("exploration: actor " + std::to_string(actor_id) + " of " +
                          std::to_string(num_actors));
  }
  switch (options.schedule) {
    case EpsilonSchedule::kApeX: {
      if (num_actors == 1) return options.epsilon;
      const double exponent =
          1.0 + options.alpha * static_cast<double>(actor_id) / static_cast<double>(num_actors - 1);
      return std::pow(options.epsilon, exponent);
    }
    case EpsilonSchedule::kFixed:
      return options.epsilon;
    case EpsilonSchedule::kLinear: {
      // anneal_steps are the run's env steps: N actors stepping alike reach
      // them when each has taken 1/N of them, so the schedule per env step
      // of the run does not change with the number of actors.
      const double run_steps = static_cast<double>(std::max<std::int64_t>(env_steps, 0)) *
                               static_cast<double>(num_actors);
      const double progress = std::min(1.0, run_steps / static_cast<double>(options.anneal_steps));
      return options.start + progress * (options.end - options.start);
    }
  }
  return options.epsilon;
}

}  // namespace rlswarm::actors
