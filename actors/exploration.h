#pragma once

// Epsilon-greedy exploration schedules for actors.
//
//   ape_x:  actor i of N explores with eps_i = eps^(1 + alpha * i / (N - 1))
//           all run long (Horgan et al. 2018, section 4.1: eps 0.4, alpha 7);
//           one actor (N = 1) uses eps.
//   fixed:  eps for every actor.
//   linear: from `start` to `end` over `anneal_steps` env steps of the run
//           (each of N actors counts its own steps N times), then `end`
//           (the DQN schedule).

#include <cstdint>
#include <string>

namespace rlswarm::actors {

enum class EpsilonSchedule { kApeX, kFixed, kLinear };

struct ExplorationOptions {
  EpsilonSchedule schedule = EpsilonSchedule::kApeX;
  double epsilon = 0.4;  // ape_x base, fixed value
  double alpha = 7.0;    // ape_x
  double start = 1.0;    // linear
  double end = 0.05;     // linear
  std::int64_t anneal_steps = 10000;
  // Throws InvalidArgument unless every epsilon is in [0, 1], alpha >= 0
  // and anneal_steps >= 1.
  void Validate() const;
};

// "ape_x", "fixed", "linear"; ParseEpsilonSchedule throws InvalidArgument.
std::string EpsilonScheduleName(EpsilonSchedule schedule);
EpsilonSchedule ParseEpsilonSchedule(const std::string& name);

// The epsilon of actor `actor_id` of `num_actors` after `env_steps` steps.
double Epsilon(const ExplorationOptions& options, std::int64_t actor_id, std::int64_t num_actors,
               std::int64_t env_steps);

}  // namespace rlswarm::actors
