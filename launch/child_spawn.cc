#include "launch/child_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/search_path.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/errors.h"

namespace rlswarm::launch {
namespace {

namespace bp = boost::process;

// Opens (creating it and its directory) `path` for appending. Throws
// Unavailable.
int OpenLogFile(const std::string& child, const std::string& path) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Unavailable("child '" + child + "': cannot open log file '" + path +
                      "': " + std::strerror(errno));
  }
  return fd;
}

// Everything the forked child does before exec. Runs between fork() and
// execve() in a copy of a multi-threaded process, so it only makes
// async-signal-safe calls on buffers prepared by the parent.
struct ChildSetup {
  pid_t launcher_pid = 0;
  int log_fd = -1;
  const std::string* banner_head = nullptr;  // "=== name started pid "
  const std::string* banner_tail = nullptr;  // " (restart k) ===\n"

  void Run() const {
    // Die with the launcher. The kernel sends the signal when the thread that
    // forked us exits; if the launcher already died we were re-parented.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher_pid) ::_exit(127);
    // Undo what the launcher blocked or ignored for itself.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    if (log_fd < 0) return;
    char line[512];
    size_t n = 0;
    auto append = [&](const char* s, size_t len) {
      len = std::min(len, sizeof(line) - n);
      ::memcpy(line + n, s, len);
      n += len;
    };
    append(banner_head->data(), banner_head->size());
    char digits[16];
    int d = 0;
    for (pid_t pid = ::getpid(); pid > 0 && d < 16; pid /= 10) digits[d++] = '0' + pid % 10;
    while (d > 0) append(&digits[--d], 1);
    append(banner_tail->data(), banner_tail->size());
    // One write with O_APPEND: the banner is never interleaved.
    [[maybe_unused]] ssize_t written = ::write(log_fd, line, n);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
  }
};

}  // namespace

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) +
           (abbrev != nullptr ? std::string(" (") + abbrev + ")" : std::string());
  }
  return "ended with wait status " + std::to_string(wait_status);
}

std::string ResolveExecutable(const std::string& child, const std::string& argv0) {
  if (argv0.find('/') == std::string::npos) {
    boost::filesystem::path found = bp::search_path(argv0);
    if (found.empty()) {
      throw Unavailable("child '" + child + "': executable '" + argv0 + "' not found in PATH");
    }
    return found.string();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(argv0, ec) || ::access(argv0.c_str(), X_OK) != 0) {
    throw Unavailable("child '" + child + "': '" + argv0 + "' is not an executable file");
  }
  return argv0;
}

pid_t SpawnChildProcess(const ChildSpec& spec, const std::string& exe, int restarts) {
  int log_fd = spec.log_file.empty() ? -1 : OpenLogFile(spec.name, spec.log_file);
  std::string head = "=== " + spec.name + " started pid ";
  std::string tail = " (restart " + std::to_string(restarts) + ") ===\n";
  ChildSetup setup{::getpid(), log_fd, &head, &tail};

  bp::environment env = boost::this_process::environment();
  for (const auto& [key, value] : spec.env) env[key] = value;
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  std::error_code ec;
  pid_t pid = 0;
  pid_t failed_pid = 0;  // forked, but its exec failed: Boost.Process does not reap it
  try {
    bp::child child(
        bp::exe = exe, bp::args = args, env, ec,
        bp::extend::on_exec_setup = [&setup](auto&) { setup.Run(); },
        bp::extend::on_error =
            [&failed_pid](auto& exec, const std::error_code&) {
              if (exec.pid > 0) failed_pid = exec.pid;
            });
    if (!ec) {
      pid = child.id();
      child.detach();  // the supervisor waits for and signals the pid itself
    }
  } catch (const std::exception& e) {
    if (log_fd >= 0) ::close(log_fd);
    throw Unavailable("child '" + spec.name + "': cannot start '" + exe + "': " + e.what());
  }
  if (log_fd >= 0) ::close(log_fd);
  if (failed_pid > 0) {
    // It has reported its exec error and is exiting: a short, bounded wait.
    while (::waitpid(failed_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (ec || pid <= 0) {
    throw Unavailable("child '" + spec.name + "': cannot start '" + exe +
                      "': " + (ec ? ec.message() : std::string("no pid")));
  }
  return pid;
}

}  // namespace rlswarm::launch
