#pragma once

// ProcessSupervisor runs the child processes of an `rlswarm launch` run in
// processes mode (replay shards, learner ranks, actors, an evaluator) and keeps
// them alive: a child that dies is restarted with exponential backoff, the
// ranks of one learner group are restarted together, and Stop() takes the run
// down stage by stage.
//
// How it works: one supervisor thread runs a Boost.Asio io_context. Children
// are spawned with Boost.Process from that thread; each child's exit is
// awaited asynchronously through a pidfd (Linux >= 5.3; where pidfd_open is
// unavailable, e.g. under an old seccomp profile, the exit is polled every
// 20 ms instead). Backoff and stop grace periods are steady_timers. The
// supervisor thread never blocks on a child (spawning waits only until the
// child's exec has succeeded or failed).
//
// Children and the launcher's life:
//  - Each child gets PR_SET_PDEATHSIG(SIGKILL), so `kill -9` of the launcher
//    kills every child too (no orphans). The kernel ties this to the thread
//    that forked the child, which is why every child is spawned on the
//    supervisor thread (it lives until Stop() has finished).
//  - Children stay in the launcher's process group: a SIGINT from the terminal
//    (Ctrl-C) reaches the children as well as the launcher. The rlswarm roles
//    stop cleanly (exit code 0) on SIGINT, so one that is done before the
//    launcher's Stop() begins counts as finished and is not restarted.
//  - Only the direct child is signalled and has PDEATHSIG: run a role's binary
//    directly (or `exec` it from a shell), not under a shell that forks it.
//  - Children start with an empty signal mask and default SIGTERM/SIGPIPE
//    handling, whatever the launcher blocked or ignored (BlockStopSignals()).
//
// Exit policy while the supervisor is not stopping:
//  - exit code 0: the child has finished its work; it is not restarted
//    (ChildStatus::finished). The other members of its group keep running.
//  - any other exit code, or any signal: the child (or its whole group) is
//    restarted after a backoff of initial_backoff * 2^k, capped at
//    max_backoff, where k counts the consecutive crashes; a unit (a child, or a
//    group) that ran stable_after before crashing starts again from k = 0.
//    After max_restarts consecutive restarts the next crash gives the unit up.
//    A restart whose exec fails (the binary vanished) counts as a crash.
//  - group: when a member crashes, the others are sent SIGTERM (SIGKILL after
//    stop_grace); once all are down and the backoff has passed, all members are
//    started again (including members that had finished), because the ranks of
//    a c10d group must rendezvous again.
//
// The process must leave SIGCHLD at its default and not reap children it did
// not start (waitpid(-1, ...)); a child reaped elsewhere is seen as exiting
// with code 255.
//
// Thread safety: Status() and Pid() may be called from any thread at any time.
// Add() and the callbacks must be set up before Start(); Start() and Stop()
// may be called from any thread except the supervisor thread (i.e. not from a
// callback).

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlswarm::launch {

// One child process of a run.
struct ChildSpec {
  std::string name;               // unique: "actor-3", "replay-0", "learner-0"
  std::vector<std::string> argv;  // argv[0]: executable (a path, or a name looked up in PATH)
  std::map<std::string, std::string> env;  // added to (or overriding) the parent's environment
  std::string log_file;  // stdout+stderr appended here (created with its directory); "" = inherit
  std::string group;     // children of one non-empty group restart together
  int stop_stage = 0;    // Stop(): higher stages are stopped (and waited for) first
  bool restart = true;   // false: its first crash gives it (and its group) up at once
};

struct SupervisorOptions {
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};    // the backoff doubles per consecutive crash
  std::chrono::milliseconds stable_after{10000};  // running this long resets the backoff
  // Consecutive restarts of a child (or group) before the next crash gives it
  // up (on_give_up fires). Reset together with the backoff by a stable run.
  int max_restarts = 20;
  std::chrono::milliseconds stop_grace{10000};  // SIGTERM, then SIGKILL after this

  // Throws InvalidArgument on a negative duration or count, or on
  // max_backoff < initial_backoff.
  void Validate() const;
};

struct ChildStatus {
  std::string name;
  int pid = 0;  // 0 = not running
  bool running = false;
  int restarts = 0;                   // how many times it was started again after its first start
  std::optional<int> last_exit_code;  // of its last exit, if it exited normally
  std::optional<int> last_signal;     // of its last exit, if a signal killed it
  bool finished = false;              // exited with code 0 on its own; not restarted
  bool given_up = false;              // crashed once too often; not restarted
};

class ProcessSupervisor {
 public:
  // Throws InvalidArgument if `options` do not validate.
  explicit ProcessSupervisor(SupervisorOptions options);
  // Stop()s if still running (blocking as Stop() does) and joins the
  // supervisor thread.
  ~ProcessSupervisor();

  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  // Registers a child; call before Start(). Throws InvalidArgument on an empty
  // name or argv, or a duplicate name; FailedPrecondition after Start().
  void Add(ChildSpec spec);

  // Starts the supervisor thread and spawns every child in Add() order; blocks
  // until all have been spawned (exec succeeded). Throws Unavailable naming
  // the executable if one cannot be found or started (no child is left
  // running then: those already spawned are stopped as by Stop()), and
  // FailedPrecondition if called twice.
  void Start();

  // Stops the children stage by stage, highest stop_stage first: SIGTERM to
  // every running child of the stage, a wait of up to stop_grace for all of
  // them, SIGKILL to those left (a child that survives SIGKILL for another
  // stop_grace, i.e. hangs in the kernel, is logged and abandoned); then the
  // next stage. Nothing is restarted once Stop() has begun. Blocks until all
  // stages are done and the supervisor thread has exited; at most about
  // 2 * stop_grace per stage. Idempotent; callable from several threads.
  void Stop();

  // A snapshot of every child, in Add() order. Thread-safe; never blocks on a
  // child.
  std::vector<ChildStatus> Status() const;
  // The pid of the running child `name`; nullopt if it is not running or
  // unknown. Thread-safe.
  std::optional<int> Pid(const std::string& name) const;

  // Callbacks: set before Start(); they run on the supervisor thread, must
  // not block for long and must not call Start() or Stop() (Stop() from a
  // callback would deadlock, so it aborts the process with a message); they
  // may call Status() and Pid(). An exception they throw is logged and dropped.
  //
  // A child exited unexpectedly (a non-zero code or a signal; `how` says which,
  // e.g. "exited with code 3", "killed by signal 9 (KILL)", or "failed to
  // start: ..." for a restart whose exec failed) and it (with its group) will
  // be started again in `restart_in`. Not called for the crash that gives it
  // up (on_give_up is), nor for members its group restart takes down.
  std::function<void(const std::string& name, const std::string& how,
                     std::chrono::milliseconds restart_in)>
      on_exit;
  // A child (ungrouped: its name) or a group (its group name) crashed after
  // max_restarts consecutive restarts (at its first crash if a member has
  // restart = false) and will not be started again; a group's other members
  // are stopped (SIGTERM, SIGKILL after stop_grace).
  std::function<void(const std::string& name)> on_give_up;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::launch
