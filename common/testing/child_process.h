#pragma once

// ChildProcess: the one way tests and benches start a real child process.
// argv is spawned (posix_spawn, never a bare fork: no thread of a parent that
// already runs LibTorch or ZeroMQ threads is duplicated); its stdout and
// stderr are inherited, discarded, or captured in a log file or a pipe read
// line by line; its stdin can be a pipe. A child still running when the
// handle is destroyed is killed (SIGKILL, which also ends a SIGSTOPped one)
// and reaped, so a failing test leaves no process behind.
//
// Thread safety: none; one thread owns a ChildProcess. Test and bench
// support, not a library of the product.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace rlswarm::testing {

struct ChildProcessOptions {
  // Where one of the child's output streams goes.
  enum class Sink {
    kInherit,  // this process's stream
    kNull,     // /dev/null
    kCapture,  // the log file when log_path is set, else the pipe ReadLine reads
  };
  Sink out = Sink::kInherit;
  Sink err = Sink::kInherit;
  // Captured streams go to this file (created or truncated); "" : a pipe.
  std::string log_path;
  // The child's stdin is a pipe fed by WriteLine and closed by CloseStdin;
  // otherwise it is inherited.
  bool stdin_pipe = false;
  // "NAME=value" entries added to (or replacing in) this process's environment.
  std::vector<std::string> env;
  // The file executed; "" : argv[0]. "/proc/self/exe" re-executes this binary.
  std::string program;
};

class ChildProcess {
 public:
  // Starts the child; throws Unavailable naming the program and the reason
  // (strerror) when it cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const ChildProcessOptions& options);
  // The multi-process tests' shape: stdout and stderr both in `log_path`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Always true: a child that cannot start throws. For the tests that ask.
  bool started() const { return pid_ > 0; }
  bool running() const { return !exit_code_.has_value(); }

  // Sends `signal` unless the child has already been reaped.
  void Signal(int signal) const;

  // Waits up to `timeout` for the child to exit (a pidfd is polled; no sleep
  // where the kernel has pidfds) and reaps it. Returns its exit code, 128 +
  // the signal when a signal ended it, or nullopt if it is still running.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // The signal that ended the child; 0 if it exited or is still running.
  int term_signal() const { return term_signal_; }

  // SIGKILL and reap; returns the exit code (137 unless it had already
  // exited). What the destructor does.
  int Kill();

  // The next line of the captured pipe (without '\n'); nullopt at end of
  // file or when no whole line arrives within `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  // Everything left in the captured pipe until end of file (the child and
  // its children closed it) or `timeout`, whichever comes first.
  std::string ReadAll(std::chrono::milliseconds timeout);

  // Writes `line` and '\n' to the child's stdin pipe. False if the child no
  // longer reads it (it closed stdin or exited); never raises SIGPIPE.
  bool WriteLine(const std::string& line);
  // Closes the stdin pipe: the child reads end of file.
  void CloseStdin();

  // The log file's content so far ("" without a log file).
  std::string Log() const;

 private:
  // Reads what the pipe holds within `deadline` into buffer_; false at end
  // of file or deadline.
  bool Fill(std::chrono::steady_clock::time_point deadline);
  void Reap(int status);

  pid_t pid_ = -1;
  int pidfd_ = -1;  // -1 where the kernel (or a seccomp profile) has no pidfd_open
  int out_ = -1;    // read end of the capture pipe
  int in_ = -1;     // write end of the stdin pipe
  std::string log_path_;
  std::string buffer_;  // read from out_, not yet returned
  std::optional<int> exit_code_;
  int term_signal_ = 0;
};

}  // namespace rlswarm::testing
