#pragma once

// The experiment config: every section a config file may hold, with its
// defaults. Later components (replay, learner, actors, launch) add their
// sections here. configs/*.yaml are instances of it; `--print-config` prints
// the resolved one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/actor_section.h"
#include "config/config_reader.h"
#include "config/launch_section.h"
#include "config/learner_section.h"
#include "config/model_section.h"
#include "config/replay_section.h"
#include "envs/registry.h"
#include "envs/vector_env.h"
#include "rpc/security.h"

namespace rlswarm::actors {
struct ActingNetworks;  // actors/acting_policy.h
}  // namespace rlswarm::actors

namespace rlswarm::config {

struct LogSection {
  std::string level = "info";

  template <class V>
  void Visit(V& v) {
    v.Choice("level", level, "the least severe message level that is logged; off = none",
             {"trace", "debug", "info", "warn", "error", "critical", "off"});
  }
};

struct EnvSection {
  std::string name = "CartPole-v1";
  std::int64_t num_envs = 16;
  int num_threads = 1;
  std::optional<std::int64_t> max_episode_steps;
  std::optional<double> sticky_action_prob;
  std::optional<bool> difficulty_ramping;
  std::optional<bool> minimal_action_set;
  JsonObject kwargs;
  std::optional<std::string> python;
  std::optional<std::string> vectorization_mode;
  std::optional<std::string> autoreset_mode;

  template <class V>
  void Visit(V& v) {
    v.Field("name", name,
            "the environment: a built-in one (rlswarm envs lists them), gymnasium:ID (any env "
            "gymnasium.make takes, module:ID imports module first) or plugin:PATH.so[:NAME]");
    v.Field("num_envs", num_envs, "environments per VectorEnv", Bounds{1, 1 << 20});
    v.Field("num_threads", num_threads, "threads stepping one VectorEnv", Bounds{1, 1024});
    v.Field("max_episode_steps", max_episode_steps,
            "time limit; null = the env's default, 0 = none", Bounds{0, 1e12});
    v.Field("sticky_action_prob", sticky_action_prob,
            "MinAtar: chance the previous action repeats; null = 0.1", Bounds{0, 1});
    v.Field("difficulty_ramping", difficulty_ramping, "MinAtar: games speed up; null = true");
    v.Field("minimal_action_set", minimal_action_set,
            "MinAtar: the game's minimal action set instead of all 6; null = false");
    v.Field("kwargs", kwargs,
            "keyword arguments: gymnasium.make's for gymnasium:ID, the plugin's create config "
            "(as JSON) for plugin:PATH; null = none");
    v.Field("python", python,
            "gymnasium: the Python interpreter of the env workers; null = $VIRTUAL_ENV/bin/python, "
            "else python3 on PATH");
    v.Field("vectorization_mode", vectorization_mode,
            "gymnasium: make_vec's sync, async or vector_entry_point; null = the env's vector "
            "entry point if it has one, else sync");
    v.Field("autoreset_mode", autoreset_mode,
            "gymnasium: the vector env's next_step, same_step or disabled; null = next_step");
  }

  envs::EnvOptions ToEnvOptions() const;
  envs::VectorEnvOptions ToVectorEnvOptions(envs::AutoResetSeeding seeding) const;
};

struct EvaluateSection {
  std::string policy = "random";
  std::int64_t episodes = 100;
  std::uint64_t seed = 0;

  template <class V>
  void Visit(V& v) {
    v.Choice(
        "policy", policy,
        "policy to evaluate: random, or q (a checkpoint's network: the Q-network, or TD3's policy)",
        {"random", "q"});
    v.Field("episodes", episodes, "episodes to run", Bounds{1, 1e9});
    v.Field("seed", seed, "seed of episode k is derived from (seed, k)");
  }
};

// CURVE encryption and client authentication for every rpc socket of the
// system (rpc/security.h): one switch, off by default. The key directory
// holds (all files made by `rlswarm keygen --out <keys_dir>/<name>`):
//
//   <keys_dir>/server.key_secret        key pair of every server socket (replay,
//                                       learner, ...): on the server hosts only
//   <keys_dir>/server.key               its public key: on every client host
//   <keys_dir>/<client_key>.key_secret  this process's client key pair
//                                       (client_key defaults to "client")
//   <keys_dir>/authorized_clients/*.key public keys of the clients the servers
//                                       admit; none = servers refuse to start
//
// A relative keys_dir is relative to the working directory.
struct SecuritySection {
  bool curve = false;
  std::string keys_dir;
  std::string client_key = "client";

  template <class V>
  void Visit(V& v) {
    v.Field("curve", curve,
            "encrypt every rpc socket and admit only authorized clients (CURVE + ZAP)");
    v.Field("keys_dir", keys_dir,
            "directory with server.key_secret, server.key, <client_key>.key_secret and "
            "authorized_clients/*.key; required when curve is true");
    v.Field("client_key", client_key,
            "name of this process's client key pair: <keys_dir>/<client_key>.key_secret");
  }

  // Options for a server socket (its key pair and the admitted clients) and
  // for a client socket (its key pair and the servers' public key). With
  // curve off both are the default (curve = false, no files).
  rpc::SecurityOptions ToServerOptions() const;
  rpc::SecurityOptions ToClientOptions() const;
};

struct ExperimentConfig {
  LogSection log;
  EnvSection env;
  EvaluateSection evaluate;
  SecuritySection security;
  ReplaySection replay;
  ModelSection model;
  LearnerSection learner;
  ActorSection actor;
  LaunchSection launch;

  template <class V>
  void Visit(V& v) {
    v.Section("log", log);
    v.Section("env", env);
    v.Section("evaluate", evaluate);
    v.Section("security", security);
    v.Section("replay", replay);
    v.Section("model", model);
    v.Section("learner", learner);
    v.Section("actor", actor);
    v.Section("launch", launch);
  }

  // The n-step transition signature (replay/service/transition.h) of env.
  replay::Signature TransitionSignature() const;
  // The Q-network for env (model section; learner.algorithm dqn).
  models::ModelSpec ModelSpec() const;
  // What actors (with the critics, td3) and evaluators act with: the
  // Q-network (dqn) or the policy and critics (td3) of the model section,
  // from model.seed.
  actors::ActingNetworks ActingNetworks(bool with_critic = true) const;

  // Reads `file` ("" = defaults only) with `overrides` ("section.key=value").
  // Throws ConfigError naming the key and the file and line (or override).
  static ExperimentConfig Load(const std::string& file, const std::vector<std::string>& overrides);

  // The resolved config as YAML, with comments.
  std::string ToYaml();
};

}  // namespace rlswarm::config
