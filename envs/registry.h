#pragma once

// Creates environments by name ("CartPole-v1", "MinAtar/Breakout", ...).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envs/env.h"

namespace rlswarm::envs {

struct EnvOptions {
  // Overrides the env's time limit; 0 removes it.
  std::optional<std::int64_t> max_episode_steps;
  // MinAtar only (setting them for another env is an InvalidArgument).
  // Probability that the previous action repeats instead of the chosen one
  // (reference default 0.1).
  std::optional<double> sticky_action_prob;
  // Games speed up as the agent scores (reference default true).
  std::optional<bool> difficulty_ramping;
  // Use the game's minimal action set instead of all 6 actions.
  std::optional<bool> minimal_action_set;
  // Keyword arguments for the env's constructor, a JSON object ("" = none):
  // gymnasium.make's kwargs for "gymnasium:ID" envs, the plugin's create
  // config for "plugin:PATH" envs. Built-in envs take none.
  std::string kwargs_json;
  // "gymnasium:ID" envs only (setting them for another env is an
  // InvalidArgument). The Python interpreter that runs the env workers (null:
  // $VIRTUAL_ENV/bin/python, else python3 on PATH).
  std::optional<std::string> python;
  // gymnasium.make_vec's vectorization_mode: "sync", "async" or
  // "vector_entry_point" (the env's own vector env, e.g. ale-py's threads);
  // null: the env's vector entry point if it has one, else sync.
  std::optional<std::string> vectorization_mode;
  // The Python vector env's autoreset mode: "next_step", "same_step" or
  // "disabled" (rlswarm resets finished envs itself); null: next_step.
  std::optional<std::string> autoreset_mode;

  void Validate() const;  // throws InvalidArgument naming the option
};

// Env names beyond the registered ones: "gymnasium:ID" (a Gymnasium env,
// stepped in worker processes; envs/gymnasium/) and "plugin:PATH.so[:NAME]"
// (a C/C++ env loaded from a shared library; envs/plugin_api.h).
inline constexpr std::string_view kGymnasiumPrefix = "gymnasium:";
inline constexpr std::string_view kPluginPrefix = "plugin:";
bool IsGymnasiumEnv(std::string_view name);
bool IsPluginEnv(std::string_view name);

// Every registered env name, sorted.
std::vector<std::string> EnvNames();

// The spec of an env without stepping it: for a Gymnasium env this starts a
// worker once per distinct (name, options) in this process and remembers the
// answer; a plugin env is created and destroyed (its spec may depend on its
// kwargs). Throws as MakeEnv; for a Gymnasium env also InvalidArgument for a
// module that cannot be imported, an env gymnasium.make refuses, or a space
// rlswarm cannot take (naming the env and the space).
EnvSpec DescribeEnv(std::string_view name, const EnvOptions& options = {});

// Creates a built-in or plugin env. Throws NotFound (listing the known names)
// for an unknown name, and InvalidArgument for options that do not apply or
// are out of range, and for a Gymnasium env (those run in a VectorEnv only).
// A plugin env takes max_episode_steps and kwargs (its create config) and
// throws what PluginEnv::Create throws (envs/plugin_env.h).
std::unique_ptr<Env> MakeEnv(std::string_view name, const EnvOptions& options = {});

}  // namespace rlswarm::envs
