#include "config/actor_section.h"

namespace rlswarm::config {

actors::ExplorationOptions ActorSection::ToExplorationOptions() const {
  actors::ExplorationOptions o;
  o.schedule = actors::ParseEpsilonSchedule(exploration);
  o.epsilon = epsilon;
  o.alpha = epsilon_alpha;
  o.start = epsilon_start;
  o.end = epsilon_end;
  o.anneal_steps = epsilon_anneal_steps;
  return o;
}

actors::ExplorationOptions ActorSection::ToNoiseOptions() const {
  actors::ExplorationOptions o;
  o.schedule = actors::ParseEpsilonSchedule(exploration);
  o.epsilon = noise_sigma;
  o.alpha = noise_alpha;
  return o;
}

}  // namespace rlswarm::config
