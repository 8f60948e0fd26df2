#include "launch/run_directory.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace rlswarm::launch {
namespace fs = std::filesystem;
namespace {

template <class T>
void GetIf(const nlohmann::json& j, const char* key, T& value) {
  if (j.contains(key) && !j[key].is_null()) value = j[key].get<T>();
}
template <class T>
void GetIf(const nlohmann::json& j, const char* key, std::optional<T>& value) {
  if (j.contains(key) && !j[key].is_null()) value = j[key].get<T>();
}
template <class T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
// Seconds to the millisecond: the clocks behind them are coarser anyway.
double Millis(double seconds) { return std::round(seconds * 1000) / 1000; }
std::optional<double> Millis(const std::optional<double>& seconds) {
  return seconds ? std::optional<double>(Millis(*seconds)) : std::nullopt;
}

}  // namespace

nlohmann::json RunSummary::ToJson() const {
  return {{"solved", solved},
          {"time_to_solve_s", OrNull(Millis(time_to_solve_s))},
          {"env_steps_to_solve", OrNull(env_steps_to_solve)},
          {"updates", updates},
          {"final_eval_mean_return", OrNull(final_eval_mean_return)},
          {"final_eval_episodes", final_eval_episodes},
          {"mode", mode},
          {"stop_reason", stop_reason},
          {"env_steps", env_steps},
          {"wall_time_s", Millis(wall_time_s)},
          {"evaluations", evaluations},
          {"best_eval_mean_return", OrNull(best_eval_mean_return)},
          {"resumes", resumes},
          {"restarts", restarts},
          {"learning_start_s", OrNull(Millis(learning_start_s))},
          {"eval_seconds", Millis(eval_seconds)},
          {"heldout_eval_mean_return", OrNull(heldout_eval_mean_return)},
          {"heldout_eval_std_error", OrNull(heldout_eval_std_error)},
          {"heldout_eval_episodes", heldout_eval_episodes},
          {"heldout_eval_version", OrNull(heldout_eval_version)}};
}

RunSummary RunSummary::FromJson(const nlohmann::json& j) {
  RunSummary s;
  GetIf(j, "solved", s.solved);
  GetIf(j, "time_to_solve_s", s.time_to_solve_s);
  GetIf(j, "env_steps_to_solve", s.env_steps_to_solve);
  GetIf(j, "updates", s.updates);
  GetIf(j, "final_eval_mean_return", s.final_eval_mean_return);
  GetIf(j, "final_eval_episodes", s.final_eval_episodes);
  GetIf(j, "mode", s.mode);
  GetIf(j, "stop_reason", s.stop_reason);
  GetIf(j, "env_steps", s.env_steps);
  GetIf(j, "wall_time_s", s.wall_time_s);
  GetIf(j, "evaluations", s.evaluations);
  GetIf(j, "best_eval_mean_return", s.best_eval_mean_return);
  GetIf(j, "resumes", s.resumes);
  GetIf(j, "restarts", s.restarts);
  GetIf(j, "learning_start_s", s.learning_start_s);
  GetIf(j, "eval_seconds", s.eval_seconds);
  GetIf(j, "heldout_eval_mean_return", s.heldout_eval_mean_return);
  GetIf(j, "heldout_eval_std_error", s.heldout_eval_std_error);
  GetIf(j, "heldout_eval_episodes", s.heldout_eval_episodes);
  GetIf(j, "heldout_eval_version", s.heldout_eval_version);
  return s;
}

RunDirectory RunDirectory::Open(const fs::path& root, bool resume) {
  RunDirectory run(root);
  const bool exists = fs::exists(run.config());
  if (resume && !exists) {
    throw NotFound("--resume " + root.string() + ": no run there (config.yaml is missing)");
  }
  if (!resume && exists) {
    throw FailedPrecondition("run directory " + root.string() +
                             " already holds a run; continue it with --resume " + root.string());
  }
  std::error_code error;
  for (const fs::path& dir :
       {run.root(), run.logs(), run.tensorboard(), run.episodes(), run.learner_checkpoints(),
        run.replay_checkpoints(), run.endpoints()}) {
    fs::create_directories(dir, error);
    if (error) throw Unavailable("cannot create " + dir.string() + ": " + error.message());
  }
  return run;
}

fs::path RunDirectory::DefaultPath(const std::string& runs_dir, const std::string& config_file) {
  const std::string stem = config_file.empty() ? "run" : fs::path(config_file).stem().string();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &utc);
  fs::path path = fs::path(runs_dir) / (stem + "-" + stamp);
  for (int i = 2; fs::exists(path); ++i) {
    path = fs::path(runs_dir) / (stem + "-" + stamp + "-" + std::to_string(i));
  }
  return path;
}

std::string RunDirectory::name() const {
  // "runs/x/" has an empty filename(); its last named component is "x".
  fs::path path = fs::absolute(root_).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().string();
}

std::optional<RunSummary> RunDirectory::ReadSummary() const {
  std::ifstream in(summary());
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return RunSummary::FromJson(j);
}

void RunDirectory::WriteSummary(const RunSummary& summary) const {
  WriteFileAtomically(this->summary().string(), summary.ToJson().dump(2) + "\n");
}

void RunDirectory::WriteConfig(const std::string& text) const {
  WriteFileAtomically(config().string(), text);
}

double SecondsSinceProcessStart() {
  // Field 22 of /proc/self/stat: start time in clock ticks after boot; the
  // command name (field 2) may hold spaces, so parse after its ')'.
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0;
  if (paren == std::string::npos || !(uptime_file >> uptime)) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  // Fields 3..21 precede the start time.
  for (int i = 3; i <= 21 && fields >> field; ++i) {
  }
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return 0;
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace rlswarm::launch
