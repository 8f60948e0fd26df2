#pragma once

// The directory of one `rlswarm launch` run: everything a person or a tool
// needs afterwards, in fixed places.
//
//   config.yaml          the resolved config the run uses (--resume reads it)
//   logs/<role>.log      one log per process (embedded mode: launch.log)
//   scalars.jsonl        (tag, step, wall_time, value) records (observe/scalar_log.h)
//   tensorboard/         TensorBoard event files of the same scalars
//   episodes/            training episodes, one JSON line each, per actor
//   evaluations.jsonl    one JSON line per evaluation of the learner's weights
//   checkpoints/learner  sharded learner checkpoints
//   checkpoints/replay   replay shard checkpoints (shard-<i>)
//   policies/best        the best evaluated weights (a one-rank learner checkpoint)
//   summary.json         written (atomically) when the run stops
//   endpoints/           the URLs of the run's endpoints (replay, weights, metrics,
//                        metrics.<process>)
//   prometheus_targets.json  the metrics endpoints for Prometheus' file_sd
//                        (launch/prometheus_targets.h)
//
// Thread-safety: immutable after construction.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace rlswarm::launch {

// What summary.json holds. The first six keys are the interface other tools
// read (bench/e2e.sh); keep their names.
struct RunSummary {
  bool solved = false;
  std::optional<double> time_to_solve_s;  // from launcher process start
  std::optional<std::int64_t> env_steps_to_solve;
  std::int64_t updates = 0;
  std::optional<double> final_eval_mean_return;
  std::int64_t final_eval_episodes = 0;
  // Beyond the interface: how the run went.
  std::string mode;
  std::string stop_reason;
  std::int64_t env_steps = 0;
  double wall_time_s = 0;  // this run's, summed over resumes
  std::int64_t evaluations = 0;
  std::optional<double> best_eval_mean_return;
  std::int64_t resumes = 0;
  std::int64_t restarts = 0;  // processes mode: processes restarted
  // Where the time went. learning_start_s: when the learner's first
  // published weights reached the launcher (publish_interval updates into
  // learning), or a progress sample first showed an update, whichever came
  // first (of the first run of a resumed directory). eval_seconds: the
  // evaluator's busy time, which competes with training for the cores.
  std::optional<double> learning_start_s;
  double eval_seconds = 0;
  // The best policy (policies/best) judged at the end of the run on
  // launch.heldout_eval_episodes episodes that no periodic evaluation saw:
  // the periodic evaluations all run the same fixed-seed episodes, so the
  // one that first crossed the target leans high. Empty without a best
  // policy or with heldout_eval_episodes 0.
  std::optional<double> heldout_eval_mean_return;
  std::optional<double> heldout_eval_std_error;
  std::int64_t heldout_eval_episodes = 0;
  std::optional<std::int64_t> heldout_eval_version;  // the best policy's weights version

  nlohmann::json ToJson() const;
  // Reads what ToJson wrote; missing keys keep their defaults.
  static RunSummary FromJson(const nlohmann::json& j);
};

class RunDirectory {
 public:
  // Creates `root` and its subdirectories. Throws FailedPrecondition when
  // `root` already holds a run (config.yaml) and `resume` is false, NotFound
  // when `resume` is true and it does not, Unavailable when it cannot be
  // created.
  static RunDirectory Open(const std::filesystem::path& root, bool resume);
  // runs_dir/<config file stem>-<UTC time>, unique.
  static std::filesystem::path DefaultPath(const std::string& runs_dir,
                                           const std::string& config_file);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path config() const { return root_ / "config.yaml"; }
  std::filesystem::path logs() const { return root_ / "logs"; }
  std::filesystem::path scalars() const { return root_ / "scalars.jsonl"; }
  std::filesystem::path tensorboard() const { return root_ / "tensorboard"; }
  std::filesystem::path episodes() const { return root_ / "episodes"; }
  std::filesystem::path evaluations() const { return root_ / "evaluations.jsonl"; }
  std::filesystem::path learner_checkpoints() const { return root_ / "checkpoints" / "learner"; }
  std::filesystem::path replay_checkpoints() const { return root_ / "checkpoints" / "replay"; }
  // The weights of the best complete evaluation, as a learner checkpoint.
  std::filesystem::path best_policy() const { return root_ / "policies" / "best"; }
  std::filesystem::path summary() const { return root_ / "summary.json"; }
  std::filesystem::path endpoints() const { return root_ / "endpoints"; }
  std::filesystem::path prometheus_targets() const { return root_ / "prometheus_targets.json"; }
  // The directory's own name (the `run` label of its metrics targets).
  std::string name() const;

  // The summary of an earlier (stopped) run in this directory, if any.
  std::optional<RunSummary> ReadSummary() const;
  // Writes summary.json atomically (temp file, fsync, rename).
  void WriteSummary(const RunSummary& summary) const;
  // Writes `text` to config.yaml atomically.
  void WriteConfig(const std::string& text) const;

 private:
  explicit RunDirectory(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

// Seconds since this process started (from /proc/self/stat), so times to
// solve include loading LibTorch and everything before main().
double SecondsSinceProcessStart();

}  // namespace rlswarm::launch
