#pragma once

// The options of the roles that need more than one config section, built in
// one place for `rlswarm actor`, `rlswarm launch` (both modes) and the
// evaluator.

#include <cstdint>
#include <string>

#include "actors/actor.h"
#include "config/experiment_config.h"
#include "evaluate/policy_evaluator.h"
#include "replay/service/replay_writer.h"

namespace rlswarm::config {

// Actor `actor_id` of actor.num_actors; no weights subscription (set
// options.weights to follow a learner).
actors::ActorOptions MakeActorOptions(const ExperimentConfig& config, std::int64_t actor_id,
                                      std::int64_t max_steps);
// The actor's writer into the replay shards (batching from the actor section).
replay::ReplayWriterOptions MakeActorWriterOptions(const ExperimentConfig& config);
// The launcher's evaluator: evaluate.seed, launch.eval_* and target_return.
evaluate::PolicyEvaluatorOptions MakeEvaluatorOptions(const ExperimentConfig& config);
// One line of an actor's episode file (the run directory's
// episodes/actor-<k>.jsonl, `rlswarm actor --metrics-file`): actor, return,
// length, epsilon, policy_version. No newline.
std::string EpisodeJsonLine(const actors::EpisodeStats& episode);

}  // namespace rlswarm::config
