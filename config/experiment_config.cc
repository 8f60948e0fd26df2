#include "config/experiment_config.h"

#include <filesystem>

#include "actors/acting_policy.h"
#include "models/continuous_networks.h"
#include "models/model_spec.h"
#include "replay/service/transition.h"

namespace rlswarm::config {

envs::EnvOptions EnvSection::ToEnvOptions() const {
  envs::EnvOptions o;
  o.max_episode_steps = max_episode_steps;
  o.sticky_action_prob = sticky_action_prob;
  o.difficulty_ramping = difficulty_ramping;
  o.minimal_action_set = minimal_action_set;
  o.kwargs_json = kwargs.text;
  o.python = python;
  o.vectorization_mode = vectorization_mode;
  o.autoreset_mode = autoreset_mode;
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

rpc::SecurityOptions SecuritySection::ToServerOptions() const {
  rpc::SecurityOptions o;
  if (!curve) return o;
  const std::filesystem::path dir(keys_dir);
  o.curve = true;
  o.server_secret_key_file = (dir / "server.key_secret").string();
  o.authorized_clients_dir = (dir / "authorized_clients").string();
  return o;
}

rpc::SecurityOptions SecuritySection::ToClientOptions() const {
  rpc::SecurityOptions o;
  if (!curve) return o;
  const std::filesystem::path dir(keys_dir);
  o.curve = true;
  o.client_secret_key_file = (dir / (client_key + ".key_secret")).string();
  o.server_public_key_file = (dir / "server.key").string();
  return o;
}

ExperimentConfig ExperimentConfig::Load(const std::string& file,
                                        const std::vector<std::string>& overrides) {
  const ConfigTree tree = ConfigTree::Load(file, overrides);
  ExperimentConfig config;
  ConfigReader reader(tree);
  config.Visit(reader);
  reader.FinishRoot();
  config.replay.Check(file);
  config.learner.Check(file);
  config.launch.Check(file);
  // Options that are valid alone but not together (a MinAtar option on a
  // classic-control env): let the env registry judge, and say where.
  try {
    envs::DescribeEnv(config.env.name, config.env.ToEnvOptions());
  } catch (const NotFound& e) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": env.name: " + e.what());
  } catch (const InvalidArgument& e) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'env': " + e.what());
  }
  // Key files are read (and checked) when a role opens its sockets; here only
  // what no key directory can fix.
  const auto& security = config.security;
  if (security.curve && security.keys_dir.empty()) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": security.keys_dir: required when security.curve is true");
  }
  if (security.curve &&
      (security.client_key.empty() || security.client_key.find('/') != std::string::npos)) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": security.client_key: must be a file name stem without '/', got '" +
                      security.client_key + "'");
  }
  return config;
}

replay::Signature ExperimentConfig::TransitionSignature() const {
  const envs::EnvSpec spec = envs::DescribeEnv(env.name, env.ToEnvOptions());
  return replay::TransitionSignature(spec.observation.dtype, spec.observation.shape,
                                     spec.action.array.dtype, spec.action.array.shape);
}

models::ModelSpec ExperimentConfig::ModelSpec() const {
  return model.ToSpec(envs::DescribeEnv(env.name, env.ToEnvOptions()));
}

actors::ActingNetworks ExperimentConfig::ActingNetworks(bool with_critic) const {
  const envs::EnvSpec spec = envs::DescribeEnv(env.name, env.ToEnvOptions());
  if (learner.algorithm != "td3") return {model.ToSpec(spec), std::nullopt, model.seed};
  models::Td3Specs td3 = model.ToTd3Specs(spec);
  actors::ActingNetworks networks{std::move(td3.policy), std::nullopt, model.seed};
  if (with_critic) networks.critic = std::move(td3.critic);
  return networks;
}

std::string ExperimentConfig::ToYaml() {
  ConfigWriter writer;
  return writer.Document([this](ConfigWriter& w) { Visit(w); });
}

}  // namespace rlswarm::config
