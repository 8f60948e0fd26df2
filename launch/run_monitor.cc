#include "launch/run_monitor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "evaluate/checkpoint_weights.h"
#include "launch/process_control.h"
#include "launch/role_metrics.h"
#include "observe/metrics_http_server.h"

namespace rlswarm::launch {
namespace {

// "1234567" -> "1.23M"
std::string Short(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.2f}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

}  // namespace

RunMonitor::RunMonitor(RunMonitorOptions options, const RunDirectory& run,
                       observe::ScalarLog& scalars, std::function<RunProgress()> progress)
    : options_(std::move(options)),
      run_(run),
      scalars_(scalars),
      progress_(std::move(progress)),
      start_offset_s_(-options_.earlier.wall_time_s),
      weights_(options_.weights),
      evaluator_(
          std::make_unique<evaluate::PolicyEvaluator>(options_.evaluator, options_.networks)),
      tty_(::isatty(STDERR_FILENO) == 1) {}

RunMonitor::~RunMonitor() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cancel_evaluation_ = true;
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

double RunMonitor::Elapsed() const { return SecondsSinceProcessStart() - start_offset_s_; }

void RunMonitor::Start() {
  thread_ = std::thread([this] { EvaluatorLoop(); });
}

void RunMonitor::EvaluatorLoop() {
  const auto interval =
      std::chrono::milliseconds(static_cast<std::int64_t>(options_.launch.eval_interval_s * 1000));
  std::uint64_t evaluated = 0;
  auto next_allowed = std::chrono::steady_clock::now();
  for (;;) {
    {
      MutexLock lock(mu_);
      cv_.WaitUntil(lock, next_allowed, [this]() RLSWARM_REQUIRES(mu_) { return stop_; });
      if (stop_ || (solved_ && options_.launch.stop_at_target)) return;
    }
    std::optional<rpc::VersionedBlob> blob =
        weights_.WaitNewer(evaluated, std::chrono::milliseconds(100));
    if (!blob) continue;
    if (blob->version > 0) NoteLearning(Elapsed());
    next_allowed = std::chrono::steady_clock::now() + interval;
    const std::int64_t env_steps = progress_().env_steps;
    evaluate::Evaluation e;
    try {
      e = evaluator_->Evaluate(blob->payloads, blob->version, &cancel_evaluation_);
    } catch (const Error& error) {
      spdlog::error("evaluation of weights v{} failed: {}", blob->version, error.what());
      evaluated = blob->version;
      continue;
    }
    evaluated = blob->version;
    Record(e, env_steps, Elapsed(), &blob->payloads);
  }
}

void RunMonitor::Record(const evaluate::Evaluation& e, std::int64_t env_steps, double elapsed,
                        const std::vector<Payload>* weights) {
  bool new_best = false;
  {
    MutexLock lock(mu_);
    ++evaluations_;
    eval_seconds_ += e.seconds;
    if (e.complete) {
      last_complete_ = e;
      new_best = !best_ || e.mean_return > *best_;
      if (new_best) {
        best_ = e.mean_return;
        best_version_ = e.version;
      }
    }
    if (e.reached_target && !solved_) {
      solved_ = true;
      solving_ = e;
      solve_time_s_ = elapsed;
      solve_env_steps_ = env_steps;
    }
  }
  if (new_best && weights) {
    // The policy a user wants afterwards is the best one judged, not the
    // learner's last (DQN's returns swing from one update to the next).
    try {
      evaluate::SaveWeightsCheckpoint(run_.best_policy().string(), options_.networks.policy,
                                      *weights, e.version);
    } catch (const Error& error) {
      spdlog::error("cannot save the best policy: {}", error.what());
    }
  }
  cv_.NotifyAll();
  std::ofstream out(run_.evaluations(), std::ios::app);
  out << nlohmann::json{{"version", e.version},          {"env_steps", env_steps},
                        {"elapsed_s", elapsed},          {"episodes", e.episodes},
                        {"complete", e.complete},        {"reached_target", e.reached_target},
                        {"mean_return", e.mean_return},  {"std_return", e.std_return},
                        {"min_return", e.min_return},    {"max_return", e.max_return},
                        {"eval_env_steps", e.env_steps}, {"eval_seconds", e.seconds}}
             .dump()
      << "\n";
  if (e.complete) {
    scalars_.Write("eval/mean_return", env_steps, e.mean_return);
    scalars_.Write("eval/updates", env_steps, static_cast<double>(e.version));
  } else if (e.episodes > 0) {
    // Stopped early (target out of reach, time limit, shutdown): the mean of
    // the episodes it finished, so that `rlswarm plot` shows every evaluation.
    scalars_.Write("eval/stopped_mean_return", env_steps, e.mean_return);
  }
  if (e.episodes > 0) {  // the spread of every evaluation: the plot's min-max band
    scalars_.Write("eval/min_return", env_steps, e.min_return);
    scalars_.Write("eval/max_return", env_steps, e.max_return);
  }
  spdlog::info("evaluation of v{}: mean return {:.1f} over {} episodes{}{}", e.version,
               e.mean_return, e.episodes, e.complete ? "" : " (stopped: target out of reach)",
               e.reached_target ? " - solved" : "");
}

bool RunMonitor::WaitSolved(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  cv_.WaitFor(lock, timeout, [this]() RLSWARM_REQUIRES(mu_) { return solved_; });
  return solved_;
}

std::string RunMonitor::WaitForStop(
    const sigset_t& stop_signals, const std::function<std::optional<std::string>()>& role_failure) {
  const auto tick_every = std::chrono::milliseconds(
      static_cast<std::int64_t>(options_.launch.progress_interval_s * 1000));
  auto next_tick = std::chrono::steady_clock::now();
  for (;;) {
    const timespec wait{0, 20'000'000};
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &wait);
    if (signal_number > 0) return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
    if (std::optional<std::string> failure = role_failure()) return *failure;
    const bool solved = options_.launch.stop_at_target && WaitSolved(std::chrono::milliseconds(0));
    if (solved || std::chrono::steady_clock::now() >= next_tick) {
      next_tick += tick_every;
      if (std::optional<std::string> reason = Tick()) return *reason;
    }
  }
}

std::optional<std::string> RunMonitor::Tick() {
  const RunProgress p = progress_();
  const double now = Elapsed();
  double steps_per_sec = 0, updates_per_sec = 0;
  {
    MutexLock lock(mu_);
    if (last_tick_ >= 0 && now > last_tick_) {
      steps_per_sec_ = static_cast<double>(p.env_steps - last_tick_steps_) / (now - last_tick_);
      updates_per_sec_ = static_cast<double>(p.updates - last_tick_updates_) / (now - last_tick_);
    }
    steps_per_sec = steps_per_sec_;
    updates_per_sec = updates_per_sec_;
    last_progress_ = p;
  }
  last_tick_ = now;
  last_tick_steps_ = p.env_steps;
  last_tick_updates_ = p.updates;
  if (p.updates > 0) NoteLearning(now);
  scalars_.Write("actors/env_steps_per_sec", p.env_steps, steps_per_sec);
  scalars_.Write("learner/updates_per_sec", p.env_steps, updates_per_sec);
  scalars_.Write("learner/updates", p.env_steps, static_cast<double>(p.updates));
  scalars_.Write("replay/size", p.env_steps, static_cast<double>(p.replay_size));
  if (p.replay_inserted > 0) {
    scalars_.Write("replay/samples_per_insert", p.env_steps,
                   static_cast<double>(p.replay_sampled) / static_cast<double>(p.replay_inserted));
  }
  if (p.train_return) scalars_.Write("train/mean_return", p.env_steps, *p.train_return);
  if (p.loss) scalars_.Write("learner/loss", p.env_steps, *p.loss);
  if (p.staleness) scalars_.Write("learner/staleness", p.env_steps, *p.staleness);
  if (p.grad_norm) scalars_.Write("learner/grad_norm", p.env_steps, *p.grad_norm);
  if (p.update_to_weight) {
    scalars_.Write("learner/update_to_weight", p.env_steps, *p.update_to_weight);
  }
  if (p.nonfinite_skipped) {
    scalars_.Write("learner/nonfinite_skipped", p.env_steps,
                   static_cast<double>(*p.nonfinite_skipped));
  }
  if (p.version_lag) scalars_.Write("actors/version_lag", p.env_steps, *p.version_lag);
  scalars_.Flush();
  PrintProgress(p, now, false);

  const config::LaunchSection& l = options_.launch;
  if (l.stop_at_target && WaitSolved(std::chrono::milliseconds(0))) return "solved";
  if (l.max_env_steps > 0 && p.env_steps >= l.max_env_steps) return "max_env_steps";
  if (l.max_wall_time_s > 0 && now >= l.max_wall_time_s) return "max_wall_time";
  return std::nullopt;
}

void RunMonitor::NoteLearning(double elapsed) {
  MutexLock lock(mu_);
  if (!learning_start_s_ || elapsed < *learning_start_s_) learning_start_s_ = elapsed;
}

void RunMonitor::PrintProgress(const RunProgress& p, double elapsed, bool final_line) {
  std::optional<evaluate::Evaluation> eval;
  double steps_per_sec = 0, updates_per_sec = 0;
  {
    MutexLock lock(mu_);
    eval = last_complete_;
    steps_per_sec = steps_per_sec_;
    updates_per_sec = updates_per_sec_;
  }
  const config::LaunchSection& l = options_.launch;
  std::string remaining;
  if (l.max_wall_time_s > 0)
    remaining = fmt::format(" | left {:.0f}s", std::max(0.0, l.max_wall_time_s - elapsed));
  if (l.max_env_steps > 0) {
    remaining += fmt::format(
        "{} {} steps", remaining.empty() ? " | left" : ",",
        Short(static_cast<double>(std::max<std::int64_t>(0, l.max_env_steps - p.env_steps))));
  }
  const std::string line = fmt::format(
      "[{:7.1f}s] steps {} ({}/s) | updates {} ({}/s) | replay {} spi {} | eval {} | train {} | "
      "lag {}{}{}",
      elapsed, Short(static_cast<double>(p.env_steps)), Short(steps_per_sec),
      Short(static_cast<double>(p.updates)), Short(updates_per_sec),
      Short(static_cast<double>(p.replay_size)),
      p.replay_inserted > 0 ? fmt::format("{:.1f}", static_cast<double>(p.replay_sampled) /
                                                        static_cast<double>(p.replay_inserted))
                            : "-",
      eval ? fmt::format("{:.1f}", eval->mean_return) : "-",
      p.train_return ? fmt::format("{:.1f}", *p.train_return) : "-",
      p.version_lag ? fmt::format("{:.0f}", *p.version_lag) : "-",
      // Only when it happened: a healthy run's line stays as short as before.
      p.nonfinite_skipped.value_or(0) > 0
          ? fmt::format(" | skipped {} (non-finite grad)", *p.nonfinite_skipped)
          : "",
      remaining);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final_line ? "\n" : "");
  } else if (final_line || elapsed - last_line_ >= std::max(5.0, l.progress_interval_s)) {
    std::fprintf(stderr, "%s\n", line.c_str());
    last_line_ = elapsed;
  }
  std::fflush(stderr);
}

std::string RunMonitor::PrometheusMetrics() const {
  MutexLock lock(mu_);
  const RunProgress& p = last_progress_;
  observe::PrometheusText text;
  text.Counter("rlswarm_env_steps_total", "env steps of the run", static_cast<double>(p.env_steps))
      .Counter("rlswarm_learner_updates_total", "learner updates", static_cast<double>(p.updates))
      .Gauge("rlswarm_env_steps_per_second", "env steps per second, last tick", steps_per_sec_)
      .Gauge("rlswarm_learner_updates_per_second", "learner updates per second, last tick",
             updates_per_sec_)
      .Gauge("rlswarm_replay_size", "items in replay, all shards",
             static_cast<double>(p.replay_size))
      .Counter("rlswarm_replay_inserted_total", "items inserted, all shards",
               static_cast<double>(p.replay_inserted))
      .Counter("rlswarm_replay_sampled_total", "items sampled, all shards",
               static_cast<double>(p.replay_sampled))
      .Counter("rlswarm_restarts_total", "processes restarted (processes mode)",
               static_cast<double>(p.restarts))
      .Counter("rlswarm_evaluations_total", "evaluations of the learner's weights",
               static_cast<double>(evaluations_))
      .Gauge("rlswarm_solved", "1 once an evaluation reached launch.target_return",
             solved_ ? 1 : 0);
  if (p.train_return) text.Gauge("rlswarm_train_return", "recent training return", *p.train_return);
  if (p.loss) text.Gauge("rlswarm_learner_loss", "learner loss, last interval", *p.loss);
  if (p.staleness) {
    text.Gauge("rlswarm_learner_staleness_updates", "updates between acting and learning",
               *p.staleness);
  }
  if (p.grad_norm) {
    text.Gauge("rlswarm_learner_grad_norm",
               "global gradient norm before clipping, mean of the last interval", *p.grad_norm);
  }
  if (p.update_to_weight) {
    text.Gauge("rlswarm_learner_update_to_weight",
               "||update|| / ||weights|| of the optimizer step, mean of the last interval",
               *p.update_to_weight);
  }
  if (p.nonfinite_skipped) {
    text.Counter("rlswarm_learner_nonfinite_skipped_total",
                 "updates skipped on every rank for a NaN or Inf gradient",
                 static_cast<double>(*p.nonfinite_skipped));
  }
  if (p.version_lag) {
    text.Gauge("rlswarm_actor_version_lag_updates", "actors' weights behind the learner",
               *p.version_lag);
  }
  if (last_complete_) {
    text.Gauge("rlswarm_eval_mean_return", "mean return of the last complete evaluation",
               last_complete_->mean_return);
  }
  return text.Text();
}

RunSummary RunMonitor::Finish(const std::string& stop_reason,
                              std::optional<rpc::VersionedBlob> final_weights) {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cancel_evaluation_ = true;  // a periodic evaluation still running is not waited for
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  const RunProgress p = progress_();
  const double elapsed = Elapsed();
  PrintProgress(p, elapsed, true);

  RunSummary s;
  s.mode = options_.mode;
  s.stop_reason = stop_reason;
  s.env_steps = p.env_steps;
  s.updates = p.updates;
  s.wall_time_s = elapsed;
  s.resumes = options_.earlier.resumes;
  s.restarts = options_.earlier.restarts + p.restarts;

  // Read under the lock for the analysis: their only writers are the
  // evaluator thread, joined above, and Record() below.
  bool solved = false;
  std::optional<evaluate::Evaluation> solving, last_complete;
  {
    MutexLock lock(mu_);
    solved = solved_;
    solving = solving_;
    last_complete = last_complete_;
  }
  std::optional<evaluate::Evaluation> final_eval;
  if (solved && options_.launch.stop_at_target) {
    final_eval = solving;
  } else if (std::optional<rpc::VersionedBlob> blob =
                 final_weights ? std::move(final_weights) : weights_.Poll(0)) {
    if (last_complete && last_complete->version == blob->version) {
      final_eval = last_complete;
    } else {
      // The final weights, every episode (no early stop): the summary's
      // final_eval_* describe them whole.
      evaluate::PolicyEvaluatorOptions o = options_.evaluator;
      o.episode_return_bound.reset();
      o.time_limit_s = options_.launch.final_eval_timeout_s;
      spdlog::info("evaluating the final weights v{}", blob->version);
      try {
        evaluate::PolicyEvaluator full(o, options_.networks);
        final_eval = full.Evaluate(blob->payloads, blob->version);
        Record(*final_eval, p.env_steps, Elapsed(), &blob->payloads);
      } catch (const Error& error) {
        // An env that fails in evaluation costs the figure, not the summary.
        spdlog::error("final evaluation failed: {}", error.what());
        final_eval.reset();
      }
    }
  }
  if (final_eval) {
    s.final_eval_mean_return = final_eval->mean_return;
    s.final_eval_episodes = final_eval->episodes;
  }
  HeldOutEvaluation(s);
  MutexLock lock(mu_);
  s.evaluations = options_.earlier.evaluations + evaluations_;
  s.eval_seconds = options_.earlier.eval_seconds + eval_seconds_;
  s.learning_start_s =
      options_.earlier.learning_start_s ? options_.earlier.learning_start_s : learning_start_s_;
  s.best_eval_mean_return = best_;
  if (options_.earlier.best_eval_mean_return &&
      (!s.best_eval_mean_return ||
       *options_.earlier.best_eval_mean_return > *s.best_eval_mean_return)) {
    s.best_eval_mean_return = options_.earlier.best_eval_mean_return;
  }
  if (options_.earlier.solved) {
    s.solved = true;
    s.time_to_solve_s = options_.earlier.time_to_solve_s;
    s.env_steps_to_solve = options_.earlier.env_steps_to_solve;
  } else if (solved_) {
    s.solved = true;
    s.time_to_solve_s = solve_time_s_;
    s.env_steps_to_solve = solve_env_steps_;
  }
  return s;
}

void RunMonitor::HeldOutEvaluation(RunSummary& s) {
  const std::int64_t episodes = options_.launch.heldout_eval_episodes;
  if (episodes <= 0 || !std::filesystem::exists(run_.best_policy())) return;
  std::vector<Payload> weights;
  try {
    weights = evaluate::CheckpointWeights(run_.best_policy().string());
  } catch (const Error& error) {
    spdlog::error("cannot read the best policy for the held-out evaluation: {}", error.what());
    return;
  }
  // Every episode runs (no early stop against the target): the figure is
  // an estimate of the policy's return, not a pass/fail.
  evaluate::PolicyEvaluatorOptions o = options_.evaluator;
  o.seed = options_.evaluator.seed + 1;
  o.episodes = episodes;
  o.target_return.reset();
  o.episode_return_bound.reset();
  o.time_limit_s = options_.launch.final_eval_timeout_s;
  std::uint64_t version = 0;
  {
    MutexLock lock(mu_);
    if (best_version_) version = *best_version_;
  }
  evaluate::Evaluation e;
  try {
    evaluate::PolicyEvaluator evaluator(o, options_.networks);
    e = evaluator.Evaluate(weights, version);
  } catch (const Error& error) {
    // An env that fails in evaluation (a Gymnasium env that raises) costs
    // the figure, not the run's summary.
    spdlog::error("held-out evaluation failed: {}", error.what());
    return;
  }
  s.heldout_eval_episodes = e.episodes;
  if (e.episodes == 0) return;
  s.heldout_eval_mean_return = e.mean_return;
  s.heldout_eval_std_error = e.std_return / std::sqrt(static_cast<double>(e.episodes));
  if (version > 0) s.heldout_eval_version = static_cast<std::int64_t>(version);
  spdlog::info("best policy{} on {} held-out episodes: mean return {:.2f} +- {:.2f}{}",
               version > 0 ? fmt::format(" (v{})", version) : std::string(), e.episodes,
               e.mean_return, *s.heldout_eval_std_error,
               e.complete ? "" : fmt::format(" (stopped after {:.0f} s)", e.seconds));
}

std::unique_ptr<observe::MetricsHttpServer> StartMetricsEndpoint(
    const config::LaunchSection& launch, const RunDirectory& run, const RunMonitor& monitor) {
  return StartRoleMetricsEndpoint({launch.metrics_bind, static_cast<int>(launch.metrics_port),
                                   (run.endpoints() / "metrics").string()},
                                  [&monitor] { return monitor.PrometheusMetrics(); });
}

}  // namespace rlswarm::launch
