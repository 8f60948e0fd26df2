// `rlswarm envs`: the registered environments and their specs.

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
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

void RunEnvs(bool json) {
  nlohmann::json all = nlohmann::json::array();
  if (!json) {
    fmt::print("{:<24} {:<22} {:<24} {}\n", "name", "observation", "action", "time limit");
  }
  for (const std::string& name : envs::EnvNames()) {
    const envs::EnvSpec spec = envs::MakeEnv(name)->spec();
    if (json) {
      all.push_back(SpecJson(spec));
      continue;
    }
    const auto& act = spec.action;
    const std::string action = act.kind == envs::ActionKind::kDiscrete
                                   ? fmt::format("discrete({})", act.num_actions)
                                   : fmt::format("continuous{} [{}, {}]", Shape(act.array.shape),
                                                 act.array.Low(0), act.array.High(0));
    fmt::print("{:<24} {:<22} {:<24} {}\n", name,
               Shape(spec.observation.shape) + " " + std::string(DTypeName(spec.observation.dtype)),
               action,
               spec.max_episode_steps > 0 ? std::to_string(spec.max_episode_steps) : "none");
  }
  if (json) std::cout << all.dump(2) << "\n";
}

}  // namespace

void AddEnvsCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("envs", "List the environments with their observation and action specs");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON (a list of specs) instead of a table");
  cmd->callback([json] { RunEnvs(*json); });
}

}  // namespace rlswarm::apps
