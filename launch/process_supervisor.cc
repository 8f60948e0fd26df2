#include "launch/process_supervisor.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstdint>
#include <future>
#include <set>
#include <thread>
#include <utility>

#include "common/errors.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "launch/child_spawn.h"

namespace rlswarm::launch {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a child's exit is polled where pidfds are unavailable.
constexpr milliseconds kExitPollInterval{20};

}  // namespace

void SupervisorOptions::Validate() const {
  if (initial_backoff.count() < 0 || max_backoff.count() < 0 || stable_after.count() < 0 ||
      stop_grace.count() < 0) {
    throw InvalidArgument("SupervisorOptions: durations must not be negative");
  }
  if (max_backoff < initial_backoff) {
    throw InvalidArgument("SupervisorOptions: max_backoff must be >= initial_backoff");
  }
  if (max_restarts < 0) throw InvalidArgument("SupervisorOptions: max_restarts must be >= 0");
}

// All state below "supervisor thread only" is touched by the io_context's
// thread alone; each child's status (statuses_) is shared with Status()/Pid()
// callers under status_mu_. Lock order: lifecycle_mu_ before status_mu_.
class ProcessSupervisor::Impl {
 public:
  using ExitCallback = decltype(ProcessSupervisor::on_exit);
  using GiveUpCallback = decltype(ProcessSupervisor::on_give_up);

  explicit Impl(SupervisorOptions options) : options_(options) {}

  void Add(ChildSpec spec) RLSWARM_EXCLUDES(lifecycle_mu_, status_mu_);
  void Start(ExitCallback on_exit, GiveUpCallback on_give_up) RLSWARM_EXCLUDES(lifecycle_mu_);
  void Stop() RLSWARM_EXCLUDES(lifecycle_mu_);
  std::vector<ChildStatus> Status() const RLSWARM_EXCLUDES(status_mu_);
  std::optional<int> Pid(const std::string& name) const RLSWARM_EXCLUDES(status_mu_);

 private:
  struct Child {
    ChildSpec spec;
    std::string exe;  // argv[0] resolved
    size_t unit = 0;
    // Supervisor thread only.
    pid_t pid = 0;  // != 0 until reaped: a pid is only signalled before it is reaped
    int restarts = 0;
    std::unique_ptr<asio::posix::stream_descriptor> pidfd;
    std::unique_ptr<asio::steady_timer> poll_timer;
  };
  enum class UnitState { kRunning, kRestarting, kGivenUp };
  // What restarts together: one ungrouped child, or all children of a group.
  struct Unit {
    std::string name;
    std::vector<size_t> members;
    bool restartable = true;  // every member has restart = true
    // Supervisor thread only.
    UnitState state = UnitState::kRunning;
    int consecutive_crashes = 0;
    Clock::time_point started_at;
    bool backoff_passed = false;
    // Bumped on every crash and restart, so a timer handler that was already
    // queued when its timer was cancelled recognises that it is stale.
    std::uint64_t generation = 0;
    std::unique_ptr<asio::steady_timer> backoff_timer;
    std::unique_ptr<asio::steady_timer> kill_timer;
  };

  // Supervisor-thread steps.
  // Forks and execs child i, then watches for its exit. Waits only for the
  // exec to succeed or fail (Boost.Process reads a close-on-exec pipe), never
  // for the child's run. Throws Unavailable.
  void SpawnChild(size_t i);
  void WatchExit(size_t i);
  void OnExitReady(size_t i);
  void OnChildExited(size_t i, int wait_status);
  void OnCrash(Unit& unit, const Child& child, const std::string& how);
  void TerminateMembers(Unit& unit);
  void MaybeRestart(Unit& unit);
  void BeginStop();
  void StopCurrentStage();
  void OnStageTimer(bool killed);
  bool StageHasRunning() const;
  void Finish();
  void Signal(Child& child, int sig);
  // Applies `update` to child i's status under status_mu_.
  void SetStatus(size_t i, const std::function<void(ChildStatus&)>& update)
      RLSWARM_EXCLUDES(status_mu_);

  const SupervisorOptions options_;
  ExitCallback on_exit_;
  GiveUpCallback on_give_up_;

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  // Added to under lifecycle_mu_ before Start(), then fixed: the supervisor
  // thread reads it without a lock.
  std::vector<Child> children_;
  std::vector<Unit> units_;

  // Supervisor thread only, once Stop() has begun.
  bool stopping_ = false;
  std::vector<int> stages_;  // descending
  size_t stage_index_ = 0;   // into stages_: the stage being stopped
  std::unique_ptr<asio::steady_timer> stage_timer_;

  mutable Mutex status_mu_;
  std::vector<ChildStatus> statuses_ RLSWARM_GUARDED_BY(status_mu_);  // children_[i]'s at i

  // Set by the supervisor thread itself, so that a callback calling Stop() is
  // caught before it deadlocks on lifecycle_mu_.
  std::atomic<std::thread::id> supervisor_thread_id_;

  Mutex lifecycle_mu_ RLSWARM_ACQUIRED_BEFORE(status_mu_);  // serialises Add/Start/Stop
  bool started_ RLSWARM_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ RLSWARM_GUARDED_BY(lifecycle_mu_) = false;
  std::thread thread_ RLSWARM_GUARDED_BY(lifecycle_mu_);
};

void ProcessSupervisor::Impl::Add(ChildSpec spec) {
  MutexLock lock(lifecycle_mu_);
  if (started_) throw FailedPrecondition("ProcessSupervisor::Add after Start");
  if (spec.name.empty()) throw InvalidArgument("ProcessSupervisor::Add: empty child name");
  if (spec.argv.empty() || spec.argv[0].empty()) {
    throw InvalidArgument("ProcessSupervisor::Add: child '" + spec.name + "' has no argv[0]");
  }
  for (const Child& c : children_) {
    if (c.spec.name == spec.name) {
      throw InvalidArgument("ProcessSupervisor::Add: duplicate child name '" + spec.name + "'");
    }
  }
  ChildStatus status;
  status.name = spec.name;
  Child child;
  child.spec = std::move(spec);
  children_.push_back(std::move(child));
  MutexLock status_lock(status_mu_);  // Status() may read statuses_ meanwhile
  statuses_.push_back(std::move(status));
}

void ProcessSupervisor::Impl::Start(ExitCallback on_exit, GiveUpCallback on_give_up) {
  MutexLock lock(lifecycle_mu_);
  if (started_) throw FailedPrecondition("ProcessSupervisor::Start called twice");
  started_ = true;
  on_exit_ = std::move(on_exit);
  on_give_up_ = std::move(on_give_up);
  // Check every executable before spawning any, so the common error leaves
  // nothing to clean up.
  for (Child& c : children_) c.exe = ResolveExecutable(c.spec.name, c.spec.argv[0]);
  std::map<std::string, size_t> group_unit;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (!c.spec.group.empty() && group_unit.count(c.spec.group) > 0) {
      c.unit = group_unit[c.spec.group];
    } else {
      c.unit = units_.size();
      Unit unit;
      unit.name = c.spec.group.empty() ? c.spec.name : c.spec.group;
      unit.backoff_timer = std::make_unique<asio::steady_timer>(io_);
      unit.kill_timer = std::make_unique<asio::steady_timer>(io_);
      units_.push_back(std::move(unit));
      if (!c.spec.group.empty()) group_unit[c.spec.group] = c.unit;
    }
    units_[c.unit].members.push_back(i);
    units_[c.unit].restartable = units_[c.unit].restartable && c.spec.restart;
    c.poll_timer = std::make_unique<asio::steady_timer>(io_);
  }
  stage_timer_ = std::make_unique<asio::steady_timer>(io_);

  // Spawn on the supervisor thread: PR_SET_PDEATHSIG is tied to the forking
  // thread, and that thread lives until Stop() is done.
  std::promise<void> spawned;
  asio::post(io_, [this, &spawned] {
    try {
      for (size_t i = 0; i < children_.size(); ++i) SpawnChild(i);
      for (Unit& unit : units_) unit.started_at = Clock::now();
      spawned.set_value();
    } catch (...) {
      spawned.set_exception(std::current_exception());
    }
  });
  thread_ = std::thread([this] {
    supervisor_thread_id_ = std::this_thread::get_id();
    io_.run();
  });
  try {
    spawned.get_future().get();
  } catch (...) {
    lock.Unlock();
    Stop();  // takes down the children spawned before the failure
    throw;
  }
}

void ProcessSupervisor::Impl::Stop() {
  if (std::this_thread::get_id() == supervisor_thread_id_.load()) {
    SPDLOG_CRITICAL("ProcessSupervisor::Stop called from the supervisor thread (a callback)");
    std::abort();
  }
  MutexLock lock(lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (!thread_.joinable()) return;  // never started, or failed before its thread
  asio::post(io_, [this] { BeginStop(); });
  thread_.join();
}

std::vector<ChildStatus> ProcessSupervisor::Impl::Status() const {
  MutexLock lock(status_mu_);
  return statuses_;
}

std::optional<int> ProcessSupervisor::Impl::Pid(const std::string& name) const {
  MutexLock lock(status_mu_);
  for (const ChildStatus& s : statuses_) {
    if (s.name == name && s.running) return s.pid;
  }
  return std::nullopt;
}

void ProcessSupervisor::Impl::SetStatus(size_t i, const std::function<void(ChildStatus&)>& update) {
  MutexLock lock(status_mu_);
  update(statuses_[i]);
}

void ProcessSupervisor::Impl::SpawnChild(size_t i) {
  Child& c = children_[i];
  const pid_t pid = SpawnChildProcess(c.spec, c.exe, c.restarts);
  c.pid = pid;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    c.pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, pidfd);
  } else {
    c.pidfd.reset();  // polled instead (old kernel or seccomp profile)
  }
  SetStatus(i, [&](ChildStatus& s) {
    s.pid = pid;
    s.running = true;
    s.restarts = c.restarts;
    s.finished = false;
  });
  SPDLOG_INFO("started {} pid {} (restart {})", c.spec.name, pid, c.restarts);
  WatchExit(i);
}

void ProcessSupervisor::Impl::WatchExit(size_t i) {
  Child& c = children_[i];
  auto handler = [this, i](const boost::system::error_code& ec) {
    if (!ec) OnExitReady(i);
  };
  if (c.pidfd) {
    // The pidfd turns readable when the process exits (and stays so).
    c.pidfd->async_wait(asio::posix::descriptor_base::wait_read, handler);
  } else {
    c.poll_timer->expires_after(kExitPollInterval);
    c.poll_timer->async_wait(handler);
  }
}

void ProcessSupervisor::Impl::OnExitReady(size_t i) {
  Child& c = children_[i];
  if (c.pid == 0) return;
  int wait_status = 0;
  pid_t r;
  do {
    r = ::waitpid(c.pid, &wait_status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {  // still running: a poll tick (or a spurious wake-up)
    WatchExit(i);
    return;
  }
  if (r < 0) {
    // Someone else in this process reaped it; the exit status is lost.
    SPDLOG_WARN("{} pid {} was reaped elsewhere: {}", c.spec.name, c.pid, std::strerror(errno));
    wait_status = W_EXITCODE(255, 0);
  }
  OnChildExited(i, wait_status);
}

void ProcessSupervisor::Impl::OnChildExited(size_t i, int wait_status) {
  Child& c = children_[i];
  Unit& unit = units_[c.unit];
  c.pid = 0;
  if (c.pidfd) {
    boost::system::error_code ignored;
    c.pidfd->close(ignored);
    c.pidfd.reset();
  }
  const bool clean = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  const bool on_its_own = !stopping_ && unit.state == UnitState::kRunning;
  SetStatus(i, [&](ChildStatus& s) {
    s.pid = 0;
    s.running = false;
    s.last_exit_code.reset();
    s.last_signal.reset();
    if (WIFEXITED(wait_status)) s.last_exit_code = WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) s.last_signal = WTERMSIG(wait_status);
    if (on_its_own && clean) s.finished = true;
  });
  const std::string how = DescribeExit(wait_status);

  if (stopping_) {
    SPDLOG_INFO("{} stopped: {}", c.spec.name, how);
    if (!StageHasRunning()) {
      ++stage_index_;
      StopCurrentStage();
    }
    return;
  }
  switch (unit.state) {
    case UnitState::kRestarting:  // taken down with its group
      MaybeRestart(unit);
      return;
    case UnitState::kGivenUp:
      return;
    case UnitState::kRunning:
      break;
  }
  if (clean) {
    SPDLOG_INFO("{} finished (exit code 0); not restarted", c.spec.name);
    return;
  }
  OnCrash(unit, c, how);
}

void ProcessSupervisor::Impl::OnCrash(Unit& unit, const Child& child, const std::string& how) {
  if (Clock::now() - unit.started_at >= options_.stable_after) unit.consecutive_crashes = 0;
  if (!unit.restartable || unit.consecutive_crashes >= options_.max_restarts) {
    SPDLOG_ERROR("{} {}; giving up {} after {} consecutive restarts", child.spec.name, how,
                 unit.name, unit.consecutive_crashes);
    unit.state = UnitState::kGivenUp;
    for (size_t m : unit.members) SetStatus(m, [](ChildStatus& s) { s.given_up = true; });
    TerminateMembers(unit);
    if (on_give_up_) {
      try {
        on_give_up_(unit.name);
      } catch (const std::exception& e) {
        SPDLOG_ERROR("on_give_up callback threw: {}", e.what());
      }
    }
    return;
  }
  milliseconds delay = options_.initial_backoff;
  for (int k = 0; k < unit.consecutive_crashes && delay < options_.max_backoff; ++k) delay *= 2;
  delay = std::min(delay, options_.max_backoff);
  ++unit.consecutive_crashes;
  SPDLOG_WARN("{} {}; restarting {} in {} ms", child.spec.name, how, unit.name, delay.count());
  unit.state = UnitState::kRestarting;
  unit.backoff_passed = false;
  const std::uint64_t generation = ++unit.generation;
  if (on_exit_) {
    try {
      on_exit_(child.spec.name, how, delay);
    } catch (const std::exception& e) {
      SPDLOG_ERROR("on_exit callback threw: {}", e.what());
    }
  }
  TerminateMembers(unit);
  unit.backoff_timer->expires_after(delay);
  unit.backoff_timer->async_wait([this, &unit, generation](const boost::system::error_code& ec) {
    if (ec || stopping_ || generation != unit.generation) return;
    unit.backoff_passed = true;
    MaybeRestart(unit);
  });
}

void ProcessSupervisor::Impl::TerminateMembers(Unit& unit) {
  bool any = false;
  for (size_t m : unit.members) {
    if (children_[m].pid != 0) {
      Signal(children_[m], SIGTERM);
      any = true;
    }
  }
  if (!any) return;
  unit.kill_timer->expires_after(options_.stop_grace);
  unit.kill_timer->async_wait(
      [this, &unit, generation = unit.generation](const boost::system::error_code& ec) {
        if (ec || stopping_ || generation != unit.generation) return;
        for (size_t m : unit.members) {
          if (children_[m].pid != 0) Signal(children_[m], SIGKILL);
        }
      });
}

void ProcessSupervisor::Impl::MaybeRestart(Unit& unit) {
  if (unit.state != UnitState::kRestarting || !unit.backoff_passed) return;
  for (size_t m : unit.members) {
    if (children_[m].pid != 0) return;  // still going down
  }
  unit.kill_timer->cancel();
  ++unit.generation;
  unit.state = UnitState::kRunning;
  unit.started_at = Clock::now();
  for (size_t m : unit.members) {
    Child& c = children_[m];
    ++c.restarts;
    try {
      SpawnChild(m);
    } catch (const Unavailable& e) {
      // As if it had crashed at once: the unit backs off (or is given up).
      SetStatus(m, [&](ChildStatus& s) { s.restarts = c.restarts; });
      OnCrash(unit, c, std::string("failed to start: ") + e.what());
      return;
    }
  }
}

void ProcessSupervisor::Impl::Signal(Child& child, int sig) {
  // pid != 0 means not yet reaped, so the pid cannot have been reused.
  if (child.pid != 0 && ::kill(child.pid, sig) != 0 && errno != ESRCH) {
    SPDLOG_WARN("kill({}, {}) for {}: {}", child.pid, sig, child.spec.name, std::strerror(errno));
  }
  // A stopped child (SIGSTOP: what the learner's watchdog reports) keeps a
  // SIGTERM pending until it is continued, and would only go at the SIGKILL
  // after stop_grace: continue it so it can act on the SIGTERM now.
  if (sig == SIGTERM && child.pid != 0) ::kill(child.pid, SIGCONT);
}

void ProcessSupervisor::Impl::BeginStop() {
  stopping_ = true;
  for (Unit& unit : units_) {
    unit.backoff_timer->cancel();
    unit.kill_timer->cancel();
  }
  std::set<int, std::greater<>> stages;
  for (const Child& c : children_) stages.insert(c.spec.stop_stage);
  stages_.assign(stages.begin(), stages.end());
  stage_index_ = 0;
  StopCurrentStage();
}

bool ProcessSupervisor::Impl::StageHasRunning() const {
  if (stage_index_ >= stages_.size()) return false;
  for (const Child& c : children_) {
    if (c.spec.stop_stage == stages_[stage_index_] && c.pid != 0) return true;
  }
  return false;
}

void ProcessSupervisor::Impl::StopCurrentStage() {
  stage_timer_->cancel();
  for (; stage_index_ < stages_.size(); ++stage_index_) {
    if (!StageHasRunning()) continue;
    SPDLOG_INFO("stopping stage {}", stages_[stage_index_]);
    for (Child& c : children_) {
      if (c.spec.stop_stage == stages_[stage_index_]) Signal(c, SIGTERM);
    }
    stage_timer_->expires_after(options_.stop_grace);
    stage_timer_->async_wait([this, stage = stage_index_](const boost::system::error_code& ec) {
      if (!ec && stage == stage_index_) OnStageTimer(/*killed=*/false);
    });
    return;
  }
  Finish();
}

// The current stage outlived its grace period: SIGKILL what is left of it;
// if it outlives that too (`killed`), abandon it and move on.
void ProcessSupervisor::Impl::OnStageTimer(bool killed) {
  for (Child& c : children_) {
    if (c.spec.stop_stage != stages_[stage_index_] || c.pid == 0) continue;
    if (!killed) {
      SPDLOG_WARN("{} pid {} outlived SIGTERM by {} ms; sending SIGKILL", c.spec.name, c.pid,
                  options_.stop_grace.count());
      Signal(c, SIGKILL);
    } else {
      SPDLOG_ERROR("{} pid {} survived SIGKILL (stuck in the kernel?); abandoning it", c.spec.name,
                   c.pid);
      c.pid = 0;  // never signal a pid we can no longer vouch for
    }
  }
  if (killed) {
    ++stage_index_;
    StopCurrentStage();
    return;
  }
  stage_timer_->expires_after(options_.stop_grace);
  stage_timer_->async_wait([this, stage = stage_index_](const boost::system::error_code& ec) {
    if (!ec && stage == stage_index_) OnStageTimer(/*killed=*/true);
  });
}

void ProcessSupervisor::Impl::Finish() {
  // Pending exit waits of abandoned children are dropped with the io_context.
  work_.reset();
  io_.stop();
}

ProcessSupervisor::ProcessSupervisor(SupervisorOptions options) {
  options.Validate();
  impl_ = std::make_unique<Impl>(options);
}

ProcessSupervisor::~ProcessSupervisor() { impl_->Stop(); }

void ProcessSupervisor::Add(ChildSpec spec) { impl_->Add(std::move(spec)); }

void ProcessSupervisor::Start() { impl_->Start(on_exit, on_give_up); }

void ProcessSupervisor::Stop() { impl_->Stop(); }

std::vector<ChildStatus> ProcessSupervisor::Status() const { return impl_->Status(); }

std::optional<int> ProcessSupervisor::Pid(const std::string& name) const {
  return impl_->Pid(name);
}

}  // namespace rlswarm::launch
