#include "config/role_options.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace rlswarm::config {

actors::ActorOptions MakeActorOptions(const ExperimentConfig& config, std::int64_t actor_id,
                                      std::int64_t max_steps) {
  actors::ActorOptions options;
  options.actor_id = actor_id;
  options.num_actors = config.actor.num_actors;
  options.env_name = config.env.name;
  options.env = config.env.ToVectorEnvOptions(envs::AutoResetSeeding::kContinue);
  options.n_step = config.actor.ToNStepOptions();
  options.n_step.reward_clip = config.learner.reward_clip;
  options.exploration = config.learner.algorithm == "td3" ? config.actor.ToNoiseOptions()
                                                          : config.actor.ToExplorationOptions();
  options.seed = config.actor.seed;
  options.max_steps = max_steps;
  options.refresh_steps = config.actor.refresh_steps;
  options.refresh_interval =
      std::chrono::milliseconds(static_cast<std::int64_t>(config.actor.refresh_interval_s * 1000));
  return options;
}

replay::ReplayWriterOptions MakeActorWriterOptions(const ExperimentConfig& config) {
  replay::ReplayWriterOptions writer = config.replay.ToWriterOptions(
      config.TransitionSignature(), config.security.ToClientOptions());
  writer.max_batch_items = config.actor.writer_batch;
  writer.flush_interval = std::chrono::milliseconds(
      std::max<std::int64_t>(1, static_cast<std::int64_t>(config.actor.writer_flush_s * 1000)));
  writer.max_buffered_batches = config.actor.writer_max_buffered_batches;
  writer.max_block =
      std::chrono::milliseconds(static_cast<std::int64_t>(config.actor.writer_max_block_s * 1000));
  return writer;
}

evaluate::PolicyEvaluatorOptions MakeEvaluatorOptions(const ExperimentConfig& config) {
  evaluate::PolicyEvaluatorOptions o;
  o.env_name = config.env.name;
  o.env = config.env.ToVectorEnvOptions(envs::AutoResetSeeding::kSeedPerEpisode);
  o.env.num_envs = config.launch.eval_num_envs;
  o.env.num_threads = 1;
  o.episodes = config.launch.eval_episodes;
  o.epsilon = config.launch.eval_epsilon;
  o.seed = config.evaluate.seed;
  o.target_return = config.launch.target_return;
  o.episode_return_bound = config.launch.episode_return_bound;
  o.time_limit_s = config.launch.eval_timeout_s;
  return o;
}

std::string EpisodeJsonLine(const actors::EpisodeStats& e) {
  return nlohmann::json{{"actor", e.actor_id},
                        {"return", e.episode_return},
                        {"length", e.length},
                        {"epsilon", e.epsilon},
                        {"policy_version", e.policy_version}}
      .dump();
}

}  // namespace rlswarm::config
