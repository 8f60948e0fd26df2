// `rlswarm envs [NAME...]`: the built-in environments and their specs, or
// the specs of the named ones (also gymnasium:ID and plugin:PATH.so[:NAME]).

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "common/errors.h"
#include "config/config_reader.h"
#include "envs/registry.h"

namespace rlswarm::apps {
namespace {

// JSON has no infinity; unbounded dimensions are written as "inf"/"-inf"
// (which Python's float() reads), bounded ones as numbers.
nlohmann::json Bound(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// One number when every element shares the bound, else one per element.
nlohmann::json Bounds(const std::vector<double>& b) {
  bool uniform = std::all_of(b.begin(), b.end(), [&](double v) { return v == b[0]; });
  if (uniform) return Bound(b[0]);
  nlohmann::json list = nlohmann::json::array();
  for (double v : b) list.push_back(Bound(v));
  return list;
}

nlohmann::json SpecJson(const envs::EnvSpec& spec) {
  const auto& obs = spec.observation;
  nlohmann::json j;
  j["name"] = spec.name;
  j["observation"] = {{"shape", obs.shape},
                      {"dtype", DTypeName(obs.dtype)},
                      {"low", Bounds(obs.low)},
                      {"high", Bounds(obs.high)}};
  const auto& act = spec.action;
  if (act.kind == envs::ActionKind::kDiscrete) {
    j["action"] = {{"kind", "discrete"},
                   {"n", act.num_actions},
                   {"dtype", "int64"},
                   {"low", 0},
                   {"high", act.num_actions - 1}};
  } else {
    j["action"] = {{"kind", "continuous"},
                   {"shape", act.array.shape},
                   {"dtype", DTypeName(act.array.dtype)},
                   {"low", Bounds(act.array.low)},
                   {"high", Bounds(act.array.high)}};
  }
  j["max_episode_steps"] = spec.max_episode_steps;
  return j;
}

std::string Shape(const std::vector<std::int64_t>& shape) {
  return "(" + fmt::format("{}", fmt::join(shape, ", ")) + (shape.size() == 1 ? ",)" : ")");
}

void PrintRow(const envs::EnvSpec& spec) {
  const auto& act = spec.action;
  const std::string action = act.kind == envs::ActionKind::kDiscrete
                                 ? fmt::format("discrete({})", act.num_actions)
                                 : fmt::format("continuous{} [{}, {}]", Shape(act.array.shape),
                                               act.array.Low(0), act.array.High(0));
  fmt::print("{:<24} {:<22} {:<24} {}\n", spec.name,
             Shape(spec.observation.shape) + " " + std::string(DTypeName(spec.observation.dtype)),
             action, spec.max_episode_steps > 0 ? std::to_string(spec.max_episode_steps) : "none");
}

// Named envs are described as a run would make them (a Gymnasium env in a
// worker of the active Python, a plugin loaded and checked); an env that
// cannot be made is a config error naming it.
void RunEnvs(const std::vector<std::string>& names, const std::string& kwargs, bool json) {
  const std::vector<std::string> listed = names.empty() ? envs::EnvNames() : names;
  envs::EnvOptions options;
  options.kwargs_json = kwargs;
  std::vector<envs::EnvSpec> specs;  // all made before any is printed
  for (const std::string& name : listed) {
    try {
      specs.push_back(names.empty() ? envs::MakeEnv(name)->spec()
                                    : envs::DescribeEnv(name, options));
    } catch (const config::ConfigError&) {
      throw;
    } catch (const Error& e) {
      const std::string what = e.what();
      throw config::ConfigError(what.find(name) != std::string::npos ? what
                                                                     : "env " + name + ": " + what);
    }
    specs.back().name = name;  // as asked for (a plugin's spec has its own name)
  }
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& spec : specs) all.push_back(SpecJson(spec));
    std::cout << all.dump(2) << "\n";
    return;
  }
  fmt::print("{:<24} {:<22} {:<24} {}\n", "name", "observation", "action", "time limit");
  for (const auto& spec : specs) PrintRow(spec);
  if (names.empty()) {
    fmt::print(
        "\nAlso: gymnasium:ID (any Gymnasium env, e.g. gymnasium:ALE/Pong-v5) and "
        "plugin:PATH.so[:NAME] (a C/C++ env); `rlswarm envs NAME` describes one.\n");
  }
}

}  // namespace

void AddEnvsCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("envs", "List the environments with their observation and action specs");
  struct Args {
    std::vector<std::string> names;
    std::string kwargs;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("names", args->names,
                  "Envs to describe (built-in names, gymnasium:ID, plugin:PATH.so[:NAME]); "
                  "default: every built-in env");
  cmd->add_option("--kwargs", args->kwargs, "JSON object of the named envs' kwargs (env.kwargs)");
  cmd->add_flag("--json", args->json, "Print JSON (a list of specs) instead of a table");
  cmd->callback([args] { RunEnvs(args->names, args->kwargs, args->json); });
}

}  // namespace rlswarm::apps
