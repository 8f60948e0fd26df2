#include "apps/experiment_config.h"

namespace rlswarm::apps {

envs::EnvOptions EnvSection::ToEnvOptions() const {
  envs::EnvOptions o;
  o.max_episode_steps = max_episode_steps;
  o.sticky_action_prob = sticky_action_prob;
  o.difficulty_ramping = difficulty_ramping;
  o.minimal_action_set = minimal_action_set;
  return o;
}

envs::VectorEnvOptions EnvSection::ToVectorEnvOptions(envs::AutoResetSeeding seeding) const {
  envs::VectorEnvOptions o;
  o.num_envs = num_envs;
  o.num_threads = num_threads;
  o.seeding = seeding;
  o.env = ToEnvOptions();
  return o;
}

ExperimentConfig ExperimentConfig::Load(const std::string& file,
                                        const std::vector<std::string>& overrides) {
  const ConfigTree tree = ConfigTree::Load(file, overrides);
  ExperimentConfig config;
  ConfigReader reader(tree);
  config.Visit(reader);
  reader.FinishRoot();
  // Options that are valid alone but not together (a MinAtar option on a
  // classic-control env): let the env registry judge, and say where.
  try {
    envs::MakeEnv(config.env.name, config.env.ToEnvOptions());
  } catch (const InvalidArgument& e) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'env': " + e.what());
  }
  return config;
}

std::string ExperimentConfig::ToYaml() {
  ConfigWriter writer;
  return writer.Document([this](ConfigWriter& w) { Visit(w); });
}

}  // namespace rlswarm::apps
