#pragma once

// RunMonitor: the part of `rlswarm launch` that watches a run, the same in
// embedded and processes mode. It
//   * evaluates the learner's newest published weights on its own thread
//     (PolicyEvaluator: greedy, fixed seeds), at most every eval_interval_s,
//     and records every evaluation (evaluations.jsonl, eval/* scalars);
//   * on Tick(): samples the run's progress, writes scalars, prints the
//     progress line, and says whether a stop condition holds (env steps,
//     wall time, target evaluation return);
//   * on Finish(): evaluates the final weights unless the run stopped
//     because it was solved, and returns the summary.
//
// Times are seconds since the launcher process started, plus the wall time
// of earlier runs of the same directory (--resume).
//
// Thread-safety: Tick() and Finish() from one thread; the evaluator runs on
// its own thread and is joined by Finish() or the destructor.

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "actors/acting_policy.h"
#include "actors/weights_follower.h"
#include "common/thread_annotations.h"
#include "config/launch_section.h"
#include "evaluate/policy_evaluator.h"
#include "launch/run_directory.h"
#include "models/model_spec.h"
#include "observe/scalar_log.h"
#include "rpc/broadcast.h"

namespace rlswarm::observe {
class MetricsHttpServer;
}  // namespace rlswarm::observe

namespace rlswarm::launch {

// One sample of a run's state; unknown values stay empty.
struct RunProgress {
  std::int64_t env_steps = 0;
  std::int64_t updates = 0;
  std::int64_t replay_size = 0;
  std::int64_t replay_inserted = 0;
  std::int64_t replay_sampled = 0;
  std::optional<double> train_return;  // mean of recent training episodes
  std::optional<double> version_lag;   // actors' weights behind the newest, in updates
  std::optional<double> loss;
  std::optional<double> staleness;  // updates between acting and learning
  // The learner's training health (learner::LearnerMetrics): global
  // gradient norm before clipping, update-to-weight ratio, and updates
  // skipped for a non-finite gradient.
  std::optional<double> grad_norm;
  std::optional<double> update_to_weight;
  std::optional<std::int64_t> nonfinite_skipped;
  std::int64_t restarts = 0;
};

struct RunMonitorOptions {
  config::LaunchSection launch;
  evaluate::PolicyEvaluatorOptions evaluator;
  // What the evaluator acts with (the policy; no critics needed).
  actors::ActingNetworks networks;
  // The learner's weights publishers: one (publish_mode full) or one per
  // rank (parts), see actors::WeightsFollower.
  std::vector<rpc::SubscriberOptions> weights;
  std::string mode;    // "embedded" or "processes", for the summary
  RunSummary earlier;  // of the runs before a --resume (zeros otherwise)
};

class RunMonitor {
 public:
  // `progress` is called from Tick() and from the evaluator thread; it must
  // be thread-safe and must not block for long.
  RunMonitor(RunMonitorOptions options, const RunDirectory& run, observe::ScalarLog& scalars,
             std::function<RunProgress()> progress);
  ~RunMonitor();
  RunMonitor(const RunMonitor&) = delete;
  RunMonitor& operator=(const RunMonitor&) = delete;

  // Starts the evaluator thread.
  void Start();
  // See the class comment. Returns the stop reason ("solved", "max_env_steps",
  // "max_wall_time") when the run should stop.
  std::optional<std::string> Tick();
  // True when the run has been solved; waits up to `timeout` for it.
  bool WaitSolved(std::chrono::milliseconds timeout);
  // The launcher's main loop: ticks every launch.progress_interval_s (and at
  // once when the run is solved) until a stop condition holds, a signal of
  // `stop_signals` (blocked by the caller) arrives, or `role_failure`
  // returns a reason (polled every 20 ms). Returns the stop reason:
  // "SIGINT", "SIGTERM", a Tick() reason, or role_failure's.
  std::string WaitForStop(const sigset_t& stop_signals,
                          const std::function<std::optional<std::string>()>& role_failure);
  // Stops the evaluator, evaluates the final weights when needed (bounded by
  // launch.final_eval_timeout_s) and returns the summary (not yet written).
  // `final_weights`, when given, are judged instead of the newest broadcast
  // (processes mode: the learner's last checkpoint, written after its last
  // broadcast).
  RunSummary Finish(const std::string& stop_reason,
                    std::optional<rpc::VersionedBlob> final_weights = std::nullopt);

  double Elapsed() const;  // seconds, including earlier runs
  // The latest progress and evaluation in the Prometheus text format (for
  // the launcher's /metrics endpoint). Thread-safe.
  std::string PrometheusMetrics() const;

 private:
  void EvaluatorLoop() RLSWARM_EXCLUDES(mu_);
  // `weights`: what was evaluated; saved to policies/best when it is the
  // best complete evaluation so far.
  void Record(const evaluate::Evaluation& e, std::int64_t env_steps, double elapsed,
              const std::vector<Payload>* weights) RLSWARM_EXCLUDES(mu_);
  void PrintProgress(const RunProgress& p, double elapsed, bool final_line) RLSWARM_EXCLUDES(mu_);
  // Judges policies/best on launch.heldout_eval_episodes episodes of seed
  // evaluate.seed + 1 into `s` (RunSummary::heldout_eval_*). Blocks for
  // the evaluation, at most launch.final_eval_timeout_s.
  void HeldOutEvaluation(RunSummary& s) RLSWARM_EXCLUDES(mu_);
  // Notes the first sign that the learner updates (RunSummary::learning_start_s).
  void NoteLearning(double elapsed) RLSWARM_EXCLUDES(mu_);

  const RunMonitorOptions options_;
  const RunDirectory& run_;
  observe::ScalarLog& scalars_;
  std::function<RunProgress()> progress_;
  const double start_offset_s_;  // SecondsSinceProcessStart() at the moment of 0 elapsed
  actors::WeightsFollower weights_;
  std::unique_ptr<evaluate::PolicyEvaluator>
      evaluator_;  // used by the evaluator thread, then Finish()

  // Guards what the evaluator thread, Tick() and PrometheusMetrics() (the
  // metrics endpoint's thread) share.
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ RLSWARM_GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_evaluation_{false};  // set with stop_: ends a running evaluation
  bool solved_ RLSWARM_GUARDED_BY(mu_) = false;
  // The first evaluation that reached the target.
  std::optional<evaluate::Evaluation> solving_ RLSWARM_GUARDED_BY(mu_);
  std::optional<double> solve_time_s_ RLSWARM_GUARDED_BY(mu_);
  std::optional<std::int64_t> solve_env_steps_ RLSWARM_GUARDED_BY(mu_);
  std::optional<evaluate::Evaluation> last_complete_ RLSWARM_GUARDED_BY(mu_);
  std::optional<double> best_ RLSWARM_GUARDED_BY(mu_);
  std::optional<std::uint64_t> best_version_ RLSWARM_GUARDED_BY(mu_);  // of best_ (this run's)
  std::int64_t evaluations_ RLSWARM_GUARDED_BY(mu_) = 0;
  double eval_seconds_ RLSWARM_GUARDED_BY(mu_) = 0;  // the evaluations' own time, summed
  // See RunSummary::learning_start_s.
  std::optional<double> learning_start_s_ RLSWARM_GUARDED_BY(mu_);
  RunProgress last_progress_ RLSWARM_GUARDED_BY(mu_);
  double steps_per_sec_ RLSWARM_GUARDED_BY(mu_) = 0;
  double updates_per_sec_ RLSWARM_GUARDED_BY(mu_) = 0;

  // Tick()'s and Finish()'s thread only.
  double last_tick_ = -1;
  std::int64_t last_tick_steps_ = 0, last_tick_updates_ = 0;
  double last_line_ = -1e9;
  bool tty_ = false;
  std::thread thread_;
};

// The launcher's Prometheus endpoint (launch.metrics_port; -1 = none):
// http://<launch.metrics_bind>:<port>/metrics serving
// monitor.PrometheusMetrics(); its URL goes to <run>/endpoints/metrics.
// `monitor` must outlive it.
std::unique_ptr<observe::MetricsHttpServer> StartMetricsEndpoint(
    const config::LaunchSection& launch, const RunDirectory& run, const RunMonitor& monitor);

}  // namespace rlswarm::launch
