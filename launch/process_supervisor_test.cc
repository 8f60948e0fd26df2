#include "launch/process_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"

namespace rlswarm::launch {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Every wait in these tests polls a condition every 10 ms for up to 10 s:
// generous on a loaded 2-core machine, never a fixed sleep.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "supervisor_test.XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// Gone, or a zombie waiting for a reaper that is not us.
bool ProcessGone(int pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return stat.empty() || (paren != std::string::npos && stat.find(" Z ", paren) == paren + 1);
}

ChildSpec Shell(const std::string& name, const std::string& script) {
  ChildSpec spec;
  spec.name = name;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

ChildSpec Sleeper(const std::string& name) {
  ChildSpec spec;
  spec.name = name;
  spec.argv = {"/bin/sleep", "1000"};
  return spec;
}

SupervisorOptions FastOptions() {
  SupervisorOptions options;
  options.initial_backoff = 10ms;
  options.max_backoff = 100ms;
  options.stop_grace = 5s;
  return options;
}

ChildStatus StatusOf(const ProcessSupervisor& supervisor, const std::string& name) {
  for (const ChildStatus& s : supervisor.Status()) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no child " << name;
  return {};
}

// What the callbacks saw; they run on the supervisor thread.
struct Events {
  struct Exit {
    std::string name;
    std::string how;
    std::chrono::milliseconds restart_in;
    Clock::time_point at;
  };
  mutable std::mutex mu;
  std::vector<Exit> exits;
  std::vector<std::string> give_ups;

  void Attach(ProcessSupervisor& supervisor) {
    supervisor.on_exit = [this](const std::string& name, const std::string& how,
                                std::chrono::milliseconds restart_in) {
      std::lock_guard lock(mu);
      exits.push_back({name, how, restart_in, Clock::now()});
    };
    supervisor.on_give_up = [this](const std::string& name) {
      std::lock_guard lock(mu);
      give_ups.push_back(name);
    };
  }
  std::vector<Exit> Exits() const {
    std::lock_guard lock(mu);
    return exits;
  }
  std::vector<std::string> GiveUps() const {
    std::lock_guard lock(mu);
    return give_ups;
  }
};

TEST(ProcessSupervisorTest, StartsChildrenWithTheirEnvironmentAndLogs) {
  TempDir dir;
  ProcessSupervisor supervisor(FastOptions());
  ChildSpec spec = Shell("a", "echo \"hello $GREETING\"; echo oops >&2; exec /bin/sleep 1000");
  spec.env["GREETING"] = "world";
  spec.log_file = dir / "logs/a.log";  // the directory does not exist yet
  supervisor.Add(spec);
  supervisor.Add(Sleeper("b"));
  supervisor.Start();

  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(dir / "logs/a.log").find("oops") != std::string::npos; }));
  std::optional<int> pid = supervisor.Pid("a");
  ASSERT_TRUE(pid.has_value());
  EXPECT_EQ(ReadLines(dir / "logs/a.log"),
            (std::vector<std::string>{
                "=== a started pid " + std::to_string(*pid) + " (restart 0) ===", "hello world",
                "oops"}));
  EXPECT_TRUE(supervisor.Pid("b").has_value());
  EXPECT_FALSE(supervisor.Pid("nobody").has_value());
  std::vector<ChildStatus> status = supervisor.Status();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].name, "a");
  EXPECT_TRUE(status[0].running);
  EXPECT_EQ(status[0].restarts, 0);
  supervisor.Stop();
  EXPECT_FALSE(supervisor.Pid("a").has_value());
}

TEST(ProcessSupervisorTest, RestartsAChildKilledBySignalAndAppendsToItsLog) {
  TempDir dir;
  ProcessSupervisor supervisor(FastOptions());
  Events events;
  events.Attach(supervisor);
  ChildSpec spec = Shell("a", "echo up; exec /bin/sleep 1000");
  spec.log_file = dir / "a.log";
  supervisor.Add(spec);
  supervisor.Start();
  const int first_pid = *supervisor.Pid("a");
  ASSERT_TRUE(WaitFor([&] { return ReadLines(dir / "a.log").size() == 2; }));  // said "up"

  ASSERT_EQ(::kill(first_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    ChildStatus s = StatusOf(supervisor, "a");
    return s.running && s.restarts == 1;
  }));
  ChildStatus s = StatusOf(supervisor, "a");
  EXPECT_NE(s.pid, first_pid);
  EXPECT_EQ(s.last_signal, SIGKILL);
  std::vector<Events::Exit> exits = events.Exits();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].name, "a");
  EXPECT_NE(exits[0].how.find("signal 9"), std::string::npos) << exits[0].how;
  EXPECT_EQ(exits[0].restart_in, 10ms);
  ASSERT_TRUE(WaitFor([&] { return ReadLines(dir / "a.log").size() >= 4; }))
      << ReadFile(dir / "a.log");
  EXPECT_EQ(ReadLines(dir / "a.log"),
            (std::vector<std::string>{
                "=== a started pid " + std::to_string(first_pid) + " (restart 0) ===", "up",
                "=== a started pid " + std::to_string(s.pid) + " (restart 1) ===", "up"}));
}

TEST(ProcessSupervisorTest, BackoffDoublesPerConsecutiveCrashUpToTheCap) {
  SupervisorOptions options = FastOptions();
  options.initial_backoff = 20ms;
  options.max_backoff = 160ms;
  options.max_restarts = 100;
  ProcessSupervisor supervisor(options);
  Events events;
  events.Attach(supervisor);
  supervisor.Add(Shell("a", "exit 3"));
  supervisor.Start();

  ASSERT_TRUE(WaitFor([&] { return events.Exits().size() >= 6; }));
  supervisor.Stop();
  std::vector<Events::Exit> exits = events.Exits();
  std::vector<std::chrono::milliseconds> delays;
  for (size_t i = 0; i < 6; ++i) {
    delays.push_back(exits[i].restart_in);
    EXPECT_EQ(exits[i].how, "exited with code 3");
  }
  EXPECT_EQ(delays,
            (std::vector<std::chrono::milliseconds>{20ms, 40ms, 80ms, 160ms, 160ms, 160ms}));
  // Loose: the restarts really waited (at least) the sum of the backoffs.
  EXPECT_GE(exits[5].at - exits[0].at, 20ms + 40ms + 80ms + 160ms + 160ms);
}

TEST(ProcessSupervisorTest, StableRunResetsTheBackoff) {
  TempDir dir;
  SupervisorOptions options = FastOptions();
  options.initial_backoff = 20ms;
  options.stable_after = 1s;
  ProcessSupervisor supervisor(options);
  Events events;
  events.Attach(supervisor);
  // Incarnations 1, 2 crash at once, 3 runs 2.5 s (stable) then crashes, 4
  // crashes at once, 5 finishes.
  const std::string count = dir / "count";
  supervisor.Add(
      Shell("a", "n=$(cat " + count + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + count +
                     "; case $n in 3) sleep 2.5; exit 1;; 5) exit 0;; *) exit 1;; esac"));
  supervisor.Start();

  ASSERT_TRUE(WaitFor([&] { return StatusOf(supervisor, "a").finished; }));
  std::vector<std::chrono::milliseconds> delays;
  for (const Events::Exit& e : events.Exits()) delays.push_back(e.restart_in);
  EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{20ms, 40ms, 20ms, 40ms}));
  EXPECT_EQ(StatusOf(supervisor, "a").restarts, 4);
}

TEST(ProcessSupervisorTest, GivesUpAfterMaxRestarts) {
  SupervisorOptions options = FastOptions();
  options.initial_backoff = 1ms;
  options.max_restarts = 3;
  ProcessSupervisor supervisor(options);
  Events events;
  events.Attach(supervisor);
  supervisor.Add(Shell("a", "exit 1"));
  supervisor.Start();

  // on_give_up runs just after the status says so: wait for both.
  ASSERT_TRUE(
      WaitFor([&] { return StatusOf(supervisor, "a").given_up && !events.GiveUps().empty(); }));
  EXPECT_EQ(events.GiveUps(), std::vector<std::string>{"a"});
  EXPECT_EQ(events.Exits().size(), 3u);
  supervisor.Stop();
  ChildStatus s = StatusOf(supervisor, "a");
  EXPECT_FALSE(s.running);
  EXPECT_EQ(s.restarts, 3);
  EXPECT_EQ(s.last_exit_code, 1);
}

TEST(ProcessSupervisorTest, ChildWithoutRestartIsGivenUpAtItsFirstCrash) {
  ProcessSupervisor supervisor(FastOptions());
  Events events;
  events.Attach(supervisor);
  ChildSpec spec = Shell("a", "exit 2");
  spec.restart = false;
  supervisor.Add(spec);
  supervisor.Start();

  // on_give_up runs just after the status says so: wait for both.
  ASSERT_TRUE(
      WaitFor([&] { return StatusOf(supervisor, "a").given_up && !events.GiveUps().empty(); }));
  EXPECT_EQ(events.GiveUps(), std::vector<std::string>{"a"});
  EXPECT_TRUE(events.Exits().empty());
  EXPECT_EQ(StatusOf(supervisor, "a").restarts, 0);
}

TEST(ProcessSupervisorTest, ExitCodeZeroIsFinishedNotRestarted) {
  ProcessSupervisor supervisor(FastOptions());
  Events events;
  events.Attach(supervisor);
  supervisor.Add(Shell("a", "exit 0"));
  supervisor.Start();

  ASSERT_TRUE(WaitFor([&] { return StatusOf(supervisor, "a").finished; }));
  supervisor.Stop();
  ChildStatus s = StatusOf(supervisor, "a");
  EXPECT_FALSE(s.running);
  EXPECT_EQ(s.restarts, 0);
  EXPECT_EQ(s.last_exit_code, 0);
  EXPECT_FALSE(s.given_up);
  EXPECT_TRUE(events.Exits().empty());
}

TEST(ProcessSupervisorTest, GroupRestartsTogetherWhenOneMemberDies) {
  ProcessSupervisor supervisor(FastOptions());
  Events events;
  events.Attach(supervisor);
  for (std::string name : {"learner-0", "learner-1"}) {
    ChildSpec spec = Sleeper(name);
    spec.group = "learner";
    supervisor.Add(spec);
  }
  supervisor.Add(Sleeper("actor-0"));
  supervisor.Start();
  const int l0 = *supervisor.Pid("learner-0");
  const int l1 = *supervisor.Pid("learner-1");
  const int actor = *supervisor.Pid("actor-0");

  ASSERT_EQ(::kill(l0, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    ChildStatus s0 = StatusOf(supervisor, "learner-0");
    ChildStatus s1 = StatusOf(supervisor, "learner-1");
    return s0.running && s0.restarts == 1 && s1.running && s1.restarts == 1;
  }));
  EXPECT_NE(*supervisor.Pid("learner-0"), l0);
  EXPECT_NE(*supervisor.Pid("learner-1"), l1);
  EXPECT_TRUE(ProcessGone(l1));
  EXPECT_EQ(StatusOf(supervisor, "learner-1").last_signal, SIGTERM);
  EXPECT_EQ(*supervisor.Pid("actor-0"), actor);
  EXPECT_EQ(StatusOf(supervisor, "actor-0").restarts, 0);
  std::vector<Events::Exit> exits = events.Exits();
  ASSERT_EQ(exits.size(), 1u);  // learner-1 was stopped by the supervisor, not a crash
  EXPECT_EQ(exits[0].name, "learner-0");
}

TEST(ProcessSupervisorTest, GroupRestartKillsAMemberThatIgnoresSigterm) {
  TempDir dir;
  SupervisorOptions options = FastOptions();
  options.stop_grace = 200ms;
  ProcessSupervisor supervisor(options);
  ChildSpec rank0 = Sleeper("learner-0");
  rank0.group = "learner";
  ChildSpec rank1 =
      Shell("learner-1", "trap '' TERM; touch " + (dir / "ready") + "; exec /bin/sleep 1000");
  rank1.group = "learner";
  supervisor.Add(rank0);
  supervisor.Add(rank1);
  supervisor.Start();
  ASSERT_TRUE(WaitFor([&] { return Exists(dir / "ready"); }));

  ASSERT_EQ(::kill(*supervisor.Pid("learner-0"), SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    ChildStatus s0 = StatusOf(supervisor, "learner-0");
    ChildStatus s1 = StatusOf(supervisor, "learner-1");
    return s0.running && s0.restarts == 1 && s1.running && s1.restarts == 1;
  }));
  EXPECT_EQ(StatusOf(supervisor, "learner-1").last_signal, SIGKILL);
}

TEST(ProcessSupervisorTest, GroupIsGivenUpAsAWhole) {
  SupervisorOptions options = FastOptions();
  options.max_restarts = 1;
  ProcessSupervisor supervisor(options);
  Events events;
  events.Attach(supervisor);
  ChildSpec rank0 = Shell("learner-0", "exit 1");
  rank0.group = "learner";
  ChildSpec rank1 = Sleeper("learner-1");
  rank1.group = "learner";
  supervisor.Add(rank0);
  supervisor.Add(rank1);
  supervisor.Start();

  ASSERT_TRUE(WaitFor(
      [&] { return !events.GiveUps().empty() && !StatusOf(supervisor, "learner-1").running; }));
  EXPECT_EQ(events.GiveUps(), std::vector<std::string>{"learner"});
  for (const ChildStatus& s : supervisor.Status()) {
    EXPECT_TRUE(s.given_up) << s.name;
    EXPECT_EQ(s.restarts, 1) << s.name;
  }
}

TEST(ProcessSupervisorTest, ExecutableVanishingBeforeARestartCountsAsACrash) {
  TempDir dir;
  const std::string program = dir / "program";
  std::filesystem::copy_file("/bin/sleep", program);
  SupervisorOptions options = FastOptions();
  options.max_restarts = 2;
  ProcessSupervisor supervisor(options);
  Events events;
  events.Attach(supervisor);
  ChildSpec spec;
  spec.name = "a";
  spec.argv = {program, "1000"};
  supervisor.Add(spec);
  supervisor.Start();
  std::filesystem::remove(program);

  ASSERT_EQ(::kill(*supervisor.Pid("a"), SIGKILL), 0);
  // on_give_up runs just after the status says so: wait for both.
  ASSERT_TRUE(
      WaitFor([&] { return StatusOf(supervisor, "a").given_up && !events.GiveUps().empty(); }));
  EXPECT_EQ(events.GiveUps(), std::vector<std::string>{"a"});
  std::vector<Events::Exit> exits = events.Exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_NE(exits[1].how.find("failed to start"), std::string::npos) << exits[1].how;
  EXPECT_FALSE(StatusOf(supervisor, "a").running);
}

TEST(ProcessSupervisorTest, StopStopsHighestStageFirstAndWaitsForEachStage) {
  TempDir dir;
  ProcessSupervisor supervisor(FastOptions());
  const std::string order = dir / "order";
  // On SIGTERM each child appends its name to `order`; stage 2 takes its time,
  // so stage 1 appending after it shows that Stop() waited.
  auto add = [&](const std::string& name, int stage, const std::string& delay) {
    ChildSpec spec = Shell(name, "trap 'sleep " + delay + "; echo " + name + " >> " + order +
                                     "; exit 0' TERM; touch " + (dir / name) +
                                     ".ready; while :; do sleep 0.05; done");
    spec.stop_stage = stage;
    supervisor.Add(spec);
  };
  add("s0", 0, "0");
  add("s1a", 1, "0");
  add("s2", 2, "0.3");
  add("s1b", 1, "0");
  supervisor.Start();
  for (std::string name : {"s0", "s1a", "s1b", "s2"}) {
    ASSERT_TRUE(WaitFor([&] { return Exists(dir / name + ".ready"); })) << name;
  }

  supervisor.Stop();
  std::vector<std::string> lines = ReadLines(order);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "s2");
  std::vector<std::string> middle = {lines[1], lines[2]};
  std::sort(middle.begin(), middle.end());
  EXPECT_EQ(middle, (std::vector<std::string>{"s1a", "s1b"}));
  EXPECT_EQ(lines[3], "s0");
  for (const ChildStatus& s : supervisor.Status()) {
    EXPECT_FALSE(s.running) << s.name;
    EXPECT_EQ(s.last_exit_code, 0) << s.name;
    EXPECT_FALSE(s.finished) << s.name;  // stopped, not finished on its own
  }
  supervisor.Stop();  // idempotent
}

TEST(ProcessSupervisorTest, StopKillsAChildThatIgnoresSigtermAfterTheGrace) {
  TempDir dir;
  SupervisorOptions options = FastOptions();
  options.stop_grace = 300ms;
  ProcessSupervisor supervisor(options);
  supervisor.Add(
      Shell("stubborn", "trap '' TERM; touch " + (dir / "ready") + "; exec /bin/sleep 1000"));
  supervisor.Start();
  const int pid = *supervisor.Pid("stubborn");
  ASSERT_TRUE(WaitFor([&] { return Exists(dir / "ready"); }));

  const auto start = Clock::now();
  supervisor.Stop();
  EXPECT_GE(Clock::now() - start, 300ms);
  EXPECT_EQ(StatusOf(supervisor, "stubborn").last_signal, SIGKILL);
  EXPECT_TRUE(ProcessGone(pid));
}

TEST(ProcessSupervisorTest, MissingExecutableThrowsUnavailableNamingIt) {
  {
    ProcessSupervisor supervisor(FastOptions());
    supervisor.Add(Sleeper("good"));
    ChildSpec spec;
    spec.name = "bad";
    spec.argv = {"/nonexistent/rlswarm-no-such-binary", "--flag"};
    supervisor.Add(spec);
    try {
      supervisor.Start();
      FAIL() << "Start() did not throw";
    } catch (const Unavailable& e) {
      EXPECT_NE(std::string(e.what()).find("/nonexistent/rlswarm-no-such-binary"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(StatusOf(supervisor, "good").running);
  }
  ProcessSupervisor supervisor(FastOptions());
  ChildSpec spec;
  spec.name = "bad";
  spec.argv = {"rlswarm-no-such-binary-in-path"};
  supervisor.Add(spec);
  EXPECT_THROW(supervisor.Start(), Unavailable);
}

TEST(ProcessSupervisorTest, ExecFailureStopsTheChildrenAlreadyStarted) {
  TempDir dir;
  const std::string not_a_program = dir / "not_a_program";
  std::ofstream(not_a_program) << "\x01\x02\x03 not an executable format\n";
  ::chmod(not_a_program.c_str(), 0755);
  ProcessSupervisor supervisor(FastOptions());
  supervisor.Add(Sleeper("good"));
  ChildSpec spec;
  spec.name = "bad";
  spec.argv = {not_a_program};
  supervisor.Add(spec);

  EXPECT_THROW(supervisor.Start(), Unavailable);
  ChildStatus good = StatusOf(supervisor, "good");
  EXPECT_FALSE(good.running);
  EXPECT_TRUE(good.last_signal.has_value() || good.last_exit_code.has_value());
  // The child whose exec failed was reaped too: this process has no children left.
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(ProcessSupervisorTest, DestructorStopsRunningChildren) {
  std::vector<int> pids;
  {
    ProcessSupervisor supervisor(FastOptions());
    for (int i = 0; i < 3; ++i) {
      ChildSpec spec = Sleeper("c" + std::to_string(i));
      spec.stop_stage = i;
      supervisor.Add(spec);
    }
    supervisor.Start();
    for (const ChildStatus& s : supervisor.Status()) pids.push_back(s.pid);
  }
  ASSERT_EQ(pids.size(), 3u);
  for (int pid : pids) {
    EXPECT_GT(pid, 0);
    EXPECT_TRUE(ProcessGone(pid)) << pid;
  }
}

TEST(ProcessSupervisorTest, ChildrenDieWhenTheLauncherIsKilled) {
  TempDir dir;
  const std::string pid_file = dir / "pid";
  // The launcher: a forked copy of this test process that supervises one
  // child and then waits to be killed.
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    try {
      ProcessSupervisor supervisor(FastOptions());
      supervisor.Add(Shell("orphan", "echo $$ > " + pid_file + ".tmp && mv " + pid_file + ".tmp " +
                                         pid_file + "; exec /bin/sleep 1000"));
      supervisor.Start();
      for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ASSERT_TRUE(WaitFor([&] { return Exists(pid_file); }));
  const int child = std::stoi(ReadFile(pid_file));
  ASSERT_GT(child, 0);
  ASSERT_FALSE(ProcessGone(child));

  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(child); }));
  if (!ProcessGone(child)) ::kill(child, SIGKILL);  // leave no orphan behind a failure
}

TEST(SupervisorOptionsTest, ValidateRejectsNonsense) {
  SupervisorOptions options;
  options.max_backoff = 1ms;
  EXPECT_THROW(options.Validate(), InvalidArgument);
  options = {};
  options.max_restarts = -1;
  EXPECT_THROW(ProcessSupervisor{options}, InvalidArgument);
  ProcessSupervisor supervisor{SupervisorOptions{}};
  EXPECT_THROW(supervisor.Add(ChildSpec{}), InvalidArgument);
  supervisor.Add(Sleeper("a"));
  EXPECT_THROW(supervisor.Add(Sleeper("a")), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::launch
