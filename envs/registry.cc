#include "envs/registry.h"

#include <algorithm>
#include <functional>
#include <map>

#include "common/errors.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/pendulum.h"
#include "envs/gymnasium/env_worker.h"
#include "envs/minatar/asterix.h"
#include "envs/minatar/breakout.h"
#include "envs/minatar/freeway.h"
#include "envs/minatar/minatar_env.h"
#include "envs/minatar/seaquest.h"
#include "envs/minatar/space_invaders.h"
#include "envs/plugin_env.h"

namespace rlswarm::envs {
namespace {

using Factory = std::function<std::unique_ptr<Env>(const EnvOptions&)>;

void RejectMinAtarOptions(std::string_view name, const EnvOptions& o) {
  const char* set = o.sticky_action_prob   ? "sticky_action_prob"
                    : o.difficulty_ramping ? "difficulty_ramping"
                    : o.minimal_action_set ? "minimal_action_set"
                                           : nullptr;
  if (set) {
    throw InvalidArgument("env option '" + std::string(set) +
                          "' applies only to MinAtar games, not " + std::string(name));
  }
}

// Options only the Python path reads, and (with `kwargs`) the plugin path.
void RejectForeignOptions(std::string_view name, const EnvOptions& o, bool takes_kwargs = false) {
  const bool kwargs = !takes_kwargs && !o.kwargs_json.empty() && o.kwargs_json != "{}";
  const char* set = kwargs                 ? "kwargs"
                    : o.python             ? "python"
                    : o.vectorization_mode ? "vectorization_mode"
                    : o.autoreset_mode     ? "autoreset_mode"
                                           : nullptr;
  if (set) {
    throw InvalidArgument("env option '" + std::string(set) + "' applies only to gymnasium: envs" +
                          (std::string(set) == "kwargs" ? " and plugin: envs" : "") + ", not " +
                          std::string(name));
  }
}

template <class ClassicEnv>
Factory Classic(std::string_view name) {
  return [name](const EnvOptions& o) -> std::unique_ptr<Env> {
    RejectMinAtarOptions(name, o);
    RejectForeignOptions(name, o);
    if (o.max_episode_steps) return std::make_unique<ClassicEnv>(*o.max_episode_steps);
    return std::make_unique<ClassicEnv>();
  };
}

template <class Game>
Factory MinAtar() {
  return [](const EnvOptions& o) -> std::unique_ptr<Env> {
    RejectForeignOptions(std::string("MinAtar/") + Game::kName, o);
    minatar::MinAtarOptions m;
    m.sticky_action_prob = o.sticky_action_prob.value_or(m.sticky_action_prob);
    m.difficulty_ramping = o.difficulty_ramping.value_or(m.difficulty_ramping);
    m.minimal_action_set = o.minimal_action_set.value_or(m.minimal_action_set);
    m.max_episode_steps = o.max_episode_steps.value_or(m.max_episode_steps);
    return std::make_unique<minatar::MinAtarEnv<Game>>(m);
  };
}

const std::map<std::string, Factory, std::less<>>& Registry() {
  static const auto* registry = new std::map<std::string, Factory, std::less<>>{
      {"CartPole-v1", Classic<CartPole>("CartPole-v1")},
      {"Acrobot-v1", Classic<Acrobot>("Acrobot-v1")},
      {"MountainCar-v0", Classic<MountainCar>("MountainCar-v0")},
      {"Pendulum-v1", Classic<Pendulum>("Pendulum-v1")},
      {"MinAtar/Asterix", MinAtar<minatar::Asterix>()},
      {"MinAtar/Breakout", MinAtar<minatar::Breakout>()},
      {"MinAtar/Freeway", MinAtar<minatar::Freeway>()},
      {"MinAtar/Seaquest", MinAtar<minatar::Seaquest>()},
      {"MinAtar/SpaceInvaders", MinAtar<minatar::SpaceInvaders>()},
  };
  return *registry;
}

}  // namespace

void EnvOptions::Validate() const {
  if (max_episode_steps && *max_episode_steps < 0) {
    throw InvalidArgument("env option max_episode_steps must be >= 0 (0 = no limit), got " +
                          std::to_string(*max_episode_steps));
  }
  if (vectorization_mode && *vectorization_mode != "sync" && *vectorization_mode != "async" &&
      *vectorization_mode != "vector_entry_point") {
    throw InvalidArgument(
        "env option vectorization_mode must be sync, async or vector_entry_point, got '" +
        *vectorization_mode + "'");
  }
  if (autoreset_mode && *autoreset_mode != "next_step" && *autoreset_mode != "same_step" &&
      *autoreset_mode != "disabled") {
    throw InvalidArgument(
        "env option autoreset_mode must be next_step, same_step or disabled, got '" +
        *autoreset_mode + "'");
  }
  if (sticky_action_prob && !(*sticky_action_prob >= 0.0 && *sticky_action_prob <= 1.0)) {
    throw InvalidArgument("env option sticky_action_prob must be in [0, 1], got " +
                          std::to_string(*sticky_action_prob));
  }
}

bool IsGymnasiumEnv(std::string_view name) { return name.starts_with(kGymnasiumPrefix); }
bool IsPluginEnv(std::string_view name) { return name.starts_with(kPluginPrefix); }

std::vector<std::string> EnvNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

EnvSpec DescribeEnv(std::string_view name, const EnvOptions& options) {
  if (IsGymnasiumEnv(name)) {
    options.Validate();
    return gymnasium::EnvWorker::Describe(name.substr(kGymnasiumPrefix.size()), options);
  }
  return MakeEnv(name, options)->spec();
}

std::unique_ptr<Env> MakeEnv(std::string_view name, const EnvOptions& options) {
  if (IsGymnasiumEnv(name)) {
    throw InvalidArgument(std::string(name) +
                          ": a Gymnasium env runs in worker processes behind a VectorEnv, "
                          "not as a single Env");
  }
  if (IsPluginEnv(name)) {
    options.Validate();
    RejectMinAtarOptions(name, options);
    RejectForeignOptions(name, options, /*takes_kwargs=*/true);
    return PluginEnv::Create(name.substr(kPluginPrefix.size()), options);
  }
  const auto& registry = Registry();
  auto it = registry.find(name);
  if (it == registry.end()) {
    std::string known;
    for (const auto& [n, f] : registry) known += (known.empty() ? "" : ", ") + n;
    throw NotFound("unknown env '" + std::string(name) + "'; known envs: " + known +
                   "; or gymnasium:ID, plugin:PATH.so[:NAME]");
  }
  options.Validate();
  return it->second(options);
}

}  // namespace rlswarm::envs
