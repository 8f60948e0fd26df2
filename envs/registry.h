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

  void Validate() const;  // throws InvalidArgument naming the option
};

// Every registered env name, sorted.
std::vector<std::string> EnvNames();

// Throws NotFound (listing the known names) for an unknown name, and
// InvalidArgument for options that do not apply or are out of range.
std::unique_ptr<Env> MakeEnv(std::string_view name, const EnvOptions& options = {});

}  // namespace rlswarm::envs
