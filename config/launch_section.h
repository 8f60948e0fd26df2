#pragma once

// The `launch` section of an experiment config: how `rlswarm launch` runs
// the roles (embedded threads or supervised processes), when it stops, how
// the evaluator judges the policy, and how crashed processes come back.

#include <cstdint>
#include <optional>
#include <string>

#include "config/config_reader.h"

namespace rlswarm::config {

struct LaunchSection {
  std::string mode = "auto";
  std::int64_t learner_ranks = 1;
  std::string runs_dir = "runs";
  std::int64_t max_env_steps = 0;
  double max_wall_time_s = 600;
  std::optional<double> target_return;
  bool stop_at_target = true;
  double eval_interval_s = 1;
  std::int64_t eval_episodes = 100;
  double eval_epsilon = 0;
  std::int64_t eval_num_envs = 50;
  std::optional<double> episode_return_bound;
  double eval_timeout_s = 60;
  double final_eval_timeout_s = 120;
  std::int64_t heldout_eval_episodes = 100;
  double progress_interval_s = 1;
  double restart_backoff_s = 0.2;
  double restart_backoff_max_s = 5;
  std::int64_t max_restarts = 20;
  double stop_grace_s = 30;
  std::int64_t metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";

  template <class V>
  void Visit(V& v) {
    v.Choice("mode", mode,
             "embedded: every role a thread of one process (inproc://); processes: supervised "
             "child processes; auto: embedded unless the learner has several ranks",
             {"auto", "embedded", "processes"});
    v.Field("learner_ranks", learner_ranks,
            "learner processes (one c10d group, Gloo on CPU); more than 1 means processes mode",
            Bounds{1, 4096});
    v.Field("runs_dir", runs_dir, "run directories go under this (runs/<config>-<time>)");
    v.Field("max_env_steps", max_env_steps, "stop after this many env steps; 0 = no limit",
            Bounds{0, 1e15});
    v.Field("max_wall_time_s", max_wall_time_s, "stop after this long; 0 = no limit",
            Bounds{0, 1e9});
    v.Field("target_return", target_return,
            "the run is solved when a greedy evaluation's mean return reaches this; null = never");
    v.Field("stop_at_target", stop_at_target, "stop as soon as the run is solved");
    v.Field("eval_interval_s", eval_interval_s,
            "seconds between evaluations of the newest weights (0 = back to back)", Bounds{0, 1e9});
    v.Field("eval_episodes", eval_episodes,
            "episodes per evaluation (seeds 0..N-1 of evaluate.seed)", Bounds{1, 1e9});
    v.Field("eval_num_envs", eval_num_envs, "parallel envs of the evaluator", Bounds{1, 1e6});
    v.Field("eval_epsilon", eval_epsilon,
            "epsilon-greedy evaluations instead of greedy (0); a little noise keeps a greedy "
            "policy from looping forever (MinAtar Seaquest)",
            Bounds{0, 1});
    v.Field("episode_return_bound", episode_return_bound,
            "largest return one episode can have (CartPole-v1: 500); lets an evaluation stop as "
            "soon as target_return is out of reach; null = always run every episode");
    v.Field("eval_timeout_s", eval_timeout_s,
            "bound on one periodic evaluation (an env without a time limit can run forever); "
            "one cut short counts as incomplete",
            Bounds{0.001, 1e9});
    v.Field("final_eval_timeout_s", final_eval_timeout_s,
            "bound on the evaluation of the final weights at the end of an unsolved run",
            Bounds{0, 1e9});
    v.Field("heldout_eval_episodes", heldout_eval_episodes,
            "at the end of a run, the best policy (policies/best) is judged on this many "
            "held-out episodes (seeds of evaluate.seed + 1, which no periodic evaluation "
            "uses; every episode run, bounded by final_eval_timeout_s); 0 = none",
            Bounds{0, 1e9});
    v.Field("progress_interval_s", progress_interval_s,
            "seconds between progress lines and scalar records", Bounds{0.01, 1e9});
    v.Field("restart_backoff_s", restart_backoff_s,
            "processes mode: first delay before restarting a crashed process (doubles per crash)",
            Bounds{0, 1e6});
    v.Field("restart_backoff_max_s", restart_backoff_max_s, "processes mode: longest delay",
            Bounds{0, 1e6});
    v.Field("max_restarts", max_restarts,
            "processes mode: restarts of one process (or the learner group) before the run fails",
            Bounds{0, 1e9});
    v.Field("stop_grace_s", stop_grace_s,
            "processes mode: how long a process may take to checkpoint and exit after SIGTERM "
            "before it is killed",
            Bounds{0, 1e6});
    v.Field("metrics_port", metrics_port,
            "Prometheus /metrics endpoints: the launcher's on this port, and in processes mode "
            "one per child (replay shards, learner ranks, actors, in that order) on the ports "
            "after it; 0 = every endpoint picks a free port (a restarted child gets a new one); "
            "-1 = off. <run>/prometheus_targets.json lists them for Prometheus' file_sd",
            Bounds{-1, 65535});
    v.Field("metrics_bind", metrics_bind,
            "the IP address the metrics endpoints listen on, and only there (127.0.0.1: this "
            "machine alone; 0.0.0.0 or :: every interface)");
  }

  // Throws ConfigError (naming `file`) for options that are invalid together.
  void Check(const std::string& file) const;
};

}  // namespace rlswarm::config
