#include "common/testing/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/errors.h"

extern char** environ;

namespace rlswarm::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Sink = ChildProcessOptions::Sink;

// now + timeout, saturated: a timeout of milliseconds::max() does not wrap.
Clock::time_point Deadline(std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  if (timeout >=
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + timeout;
}

// Milliseconds left until `deadline` as poll() takes them (>= 0), rounded
// up so that a poll that times out has reached the deadline.
int PollTimeout(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, INT_MAX));
}

// This process's environment with `extra` ("NAME=value") added, an entry of
// the same name replaced.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  const auto name = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const bool replaced = std::any_of(extra.begin(), extra.end(),
                                      [&](const std::string& x) { return name(x) == name(entry); });
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// What the child's side of the spawn needs; closes the parent's copies of
// the child's ends when destroyed, whether or not the spawn succeeded.
struct SpawnFds {
  int capture = -1;   // the log file or the pipe's write end, the child's
  int stdin_in = -1;  // the stdin pipe's read end, the child's
  ~SpawnFds() {
    if (capture >= 0) ::close(capture);
    if (stdin_in >= 0) ::close(stdin_in);
  }
};

void Redirect(posix_spawn_file_actions_t* actions, Sink sink, int fd, int capture) {
  if (sink == Sink::kCapture) {
    // dup2 clears close-on-exec on the child's copy only.
    posix_spawn_file_actions_adddup2(actions, capture, fd);
  } else if (sink == Sink::kNull) {
    posix_spawn_file_actions_addopen(actions, fd, "/dev/null", O_WRONLY, 0);
  }
}

ChildProcessOptions LogFile(const std::string& path) {
  ChildProcessOptions o;
  o.out = Sink::kCapture;
  o.err = Sink::kCapture;
  o.log_path = path;
  return o;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path)
    : ChildProcess(argv, LogFile(log_path)) {}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const ChildProcessOptions& options)
    : log_path_(options.log_path) {
  if (argv.empty()) throw InvalidArgument("ChildProcess: empty argv");
  const std::string program = options.program.empty() ? argv[0] : options.program;
  // Every descriptor is opened close-on-exec, so that a child spawned
  // meanwhile by another thread inherits none of them.
  SpawnFds child;
  const bool capture = options.out == Sink::kCapture || options.err == Sink::kCapture;
  if (capture && !log_path_.empty()) {
    child.capture = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (child.capture < 0) {
      throw Unavailable("cannot start " + program + ": log file " + log_path_ + ": " +
                        std::strerror(errno));
    }
  } else if (capture) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw Unavailable("cannot start " + program + ": pipe2: " + std::strerror(errno));
    }
    out_ = fds[0];
    child.capture = fds[1];
  }
  if (options.stdin_pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      const int error = errno;
      if (out_ >= 0) ::close(out_);
      throw Unavailable("cannot start " + program + ": pipe2: " + std::strerror(error));
    }
    child.stdin_in = fds[0];
    in_ = fds[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (child.stdin_in >= 0) posix_spawn_file_actions_adddup2(&actions, child.stdin_in, 0);
  Redirect(&actions, options.out, STDOUT_FILENO, child.capture);
  Redirect(&actions, options.err, STDERR_FILENO, child.capture);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = Environment(options.env);
  const int rc = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, Pointers(args).data(),
                               Pointers(env).data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (out_ >= 0) ::close(out_);
    if (in_ >= 0) ::close(in_);
    throw Unavailable("cannot start " + program + ": " + std::strerror(rc));
  }
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));  // close-on-exec by default
}

ChildProcess::~ChildProcess() {
  Kill();
  if (pidfd_ >= 0) ::close(pidfd_);
  if (out_ >= 0) ::close(out_);
  if (in_ >= 0) ::close(in_);
}

void ChildProcess::Signal(int signal) const {
  if (running()) ::kill(pid_, signal);
}

void ChildProcess::Reap(int status) {
  if (WIFSIGNALED(status)) {
    term_signal_ = WTERMSIG(status);
    exit_code_ = 128 + term_signal_;
  } else {
    exit_code_ = WEXITSTATUS(status);
  }
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = Deadline(timeout);
  while (!exit_code_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      Reap(status);
      break;
    }
    if (r < 0 && errno == ECHILD) {
      exit_code_ = -1;  // reaped by someone else (a waitpid(-1) of this process): code unknown
      break;
    }
    if (r < 0 && errno == EINTR) continue;
    if (Clock::now() >= deadline) return std::nullopt;
    if (pidfd_ >= 0) {
      // Readable once the child has exited (not when it merely stops).
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, PollTimeout(deadline));
    } else {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(5), deadline - Clock::now()));
    }
  }
  return exit_code_;
}

int ChildProcess::Kill() {
  if (!exit_code_) {
    ::kill(pid_, SIGKILL);  // ends a stopped process too
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    if (r == pid_) {
      Reap(status);
    } else {
      exit_code_ = -1;  // reaped by someone else
    }
  }
  return *exit_code_;
}

bool ChildProcess::Fill(Clock::time_point deadline) {
  if (out_ < 0) throw FailedPrecondition("ChildProcess: no output is captured in a pipe");
  while (true) {
    pollfd p{out_, POLLIN, 0};
    const int ready = ::poll(&p, 1, PollTimeout(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::read(out_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<std::string> ChildProcess::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = Deadline(timeout);
  while (true) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (!Fill(deadline)) return std::nullopt;
  }
}

std::string ChildProcess::ReadAll(std::chrono::milliseconds timeout) {
  const auto deadline = Deadline(timeout);
  while (Fill(deadline)) {
  }
  std::string all;
  all.swap(buffer_);
  return all;
}

bool ChildProcess::WriteLine(const std::string& line) {
  if (in_ < 0) return false;
  // A write to a pipe nobody reads raises SIGPIPE in the writing thread,
  // which would end the test or bench: block it here, and take back the one
  // a failed write left pending.
  sigset_t pipe_signal, old_mask;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
  const std::string text = line + "\n";
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = ::write(in_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      if (errno == EPIPE) {
        const timespec now{0, 0};
        ::sigtimedwait(&pipe_signal, nullptr, &now);
      }
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return ok;
}

void ChildProcess::CloseStdin() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

std::string ChildProcess::Log() const {
  if (log_path_.empty()) return "";
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace rlswarm::testing
