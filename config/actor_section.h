#pragma once

// The `actor` section of an experiment config: the actor swarm
// (actors/actor.h). Env count and threads come from the `env` section.

#include <cstdint>
#include <string>

#include "actors/actor.h"
#include "config/config_reader.h"

namespace rlswarm::config {

struct ActorSection {
  std::int64_t num_actors = 1;
  int n_step = 3;
  double gamma = 0.99;
  std::string exploration = "ape_x";
  double epsilon = 0.4;
  double epsilon_alpha = 7.0;
  double epsilon_start = 1.0;
  double epsilon_end = 0.05;
  std::int64_t epsilon_anneal_steps = 10000;
  double noise_sigma = 0.3;
  double noise_alpha = 3.0;
  std::int64_t refresh_steps = 100;
  double refresh_interval_s = 0.2;
  std::int64_t writer_batch = 256;
  double writer_flush_s = 0.05;
  std::int64_t writer_max_buffered_batches = 64;
  double writer_max_block_s = 1;
  std::uint64_t seed = 0;

  template <class V>
  void Visit(V& v) {
    v.Field("num_actors", num_actors, "actor processes", Bounds{1, 1e6});
    v.Field("n_step", n_step, "n of the n-step returns", Bounds{1, 1000});
    v.Field("gamma", gamma, "discount factor", Bounds{0, 1});
    v.Choice("exploration", exploration,
             "how the actors explore: ape_x = a constant epsilon per actor, spread across the "
             "actors (Ape-X); fixed = epsilon for every actor; linear = annealed from "
             "epsilon_start to epsilon_end. With td3, ape_x and fixed spread noise_sigma instead",
             {"ape_x", "fixed", "linear"});
    v.Field("epsilon", epsilon, "ape_x base epsilon, or the fixed epsilon", Bounds{0, 1});
    v.Field("epsilon_alpha", epsilon_alpha, "ape_x: eps_i = eps^(1 + alpha i / (N - 1))",
            Bounds{0, 1000});
    v.Field("epsilon_start", epsilon_start, "linear: first epsilon", Bounds{0, 1});
    v.Field("epsilon_end", epsilon_end, "linear: last epsilon", Bounds{0, 1});
    v.Field("epsilon_anneal_steps", epsilon_anneal_steps,
            "linear: env steps of the run (all actors together) to anneal over", Bounds{1, 1e12});
    v.Field("noise_sigma", noise_sigma,
            "td3: Gaussian exploration noise in units of the action's half-range: the ape_x "
            "base (sigma_i = sigma^(1 + noise_alpha i / (N - 1))) or the fixed sigma",
            Bounds{0, 1});
    v.Field("noise_alpha", noise_alpha, "td3: ape_x spread of noise_sigma across actors",
            Bounds{0, 1000});
    v.Field("refresh_steps", refresh_steps, "actor steps between checks for new weights",
            Bounds{1, 1e9});
    v.Field("refresh_interval_s", refresh_interval_s, "seconds between checks for new weights",
            Bounds{0, 1e6});
    v.Field("writer_batch", writer_batch, "transitions per insert", Bounds{1, 1 << 20});
    v.Field("writer_flush_s", writer_flush_s, "longest a transition waits before it is sent",
            Bounds{1e-4, 1e4});
    v.Field("writer_max_buffered_batches", writer_max_buffered_batches,
            "batches an actor buffers while replay is unreachable (then drops, counted)",
            Bounds{1, 1e6});
    v.Field("writer_max_block_s", writer_max_block_s,
            "how long an actor waits for room in that buffer before it drops; long when replay's "
            "rate limiter paces the actors (samples_per_insert), so they wait instead of drop",
            Bounds{0, 1e6});
    v.Field("seed", seed, "actor i's envs and exploration derive from (seed, i)");
  }

  replay::NStepOptions ToNStepOptions() const { return {n_step, gamma}; }
  actors::ExplorationOptions ToExplorationOptions() const;
  // td3: the same schedules over sigma (noise_sigma, noise_alpha; linear is
  // rejected by ExperimentConfig::Load).
  actors::ExplorationOptions ToNoiseOptions() const;
};

}  // namespace rlswarm::config
