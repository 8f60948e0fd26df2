#pragma once

// Starting one child process of a processes-mode run: argv[0] resolved, the
// child's output appended to its log file under a banner, the launcher's
// signal setup undone, and PR_SET_PDEATHSIG so that the child dies with the
// thread that forked it (ProcessSupervisor spawns every child on its own
// thread for this reason). Plus the words for how a child ended.

#include <sys/types.h>

#include <string>

#include "launch/process_supervisor.h"

namespace rlswarm::launch {

// "exited with code 3", "killed by signal 9 (KILL)": `wait_status` as
// waitpid() reports it.
std::string DescribeExit(int wait_status);

// argv[0] as an executable path: a path containing '/' must name an
// executable file; a bare name is looked up in PATH. `child` names the child
// in the error. Throws Unavailable.
std::string ResolveExecutable(const std::string& child, const std::string& argv0);

// Forks and execs `spec` with `exe` (its argv[0] resolved), its environment
// extended by spec.env, its stdout and stderr appended to spec.log_file (if
// any) after a banner line with its pid and `restarts`. Blocks only until
// the exec has succeeded or failed (Boost.Process reads a close-on-exec
// pipe), never for the child's run. The child gets SIGKILL when the calling
// thread exits. Returns its pid, not yet reaped (the caller waits for it);
// throws Unavailable when the log file cannot be opened or the exec fails.
pid_t SpawnChildProcess(const ChildSpec& spec, const std::string& exe, int restarts);

}  // namespace rlswarm::launch
