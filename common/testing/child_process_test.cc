#include "common/testing/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "common/testing/files.h"

namespace rlswarm::testing {
namespace {

using namespace std::chrono_literals;
using Sink = ChildProcessOptions::Sink;

// stdout into the pipe ReadLine reads; stderr stays this test's.
ChildProcessOptions Piped(bool stdin_pipe = false) {
  ChildProcessOptions o;
  o.out = Sink::kCapture;
  o.stdin_pipe = stdin_pipe;
  return o;
}

TEST(ChildProcessTest, WaitReturnsTheExitCode) {
  ChildProcess child({"/bin/sh", "-c", "exit 3"}, ChildProcessOptions{});
  EXPECT_GT(child.pid(), 0);
  EXPECT_EQ(child.Wait(20s), 3);
  EXPECT_FALSE(child.running());
  EXPECT_EQ(child.term_signal(), 0);
  EXPECT_EQ(child.Wait(0ms), 3);  // reaped once, remembered
}

TEST(ChildProcessTest, ASignalledChildExitsWith128PlusTheSignal) {
  ChildProcess cat({"/bin/cat"}, Piped(/*stdin_pipe=*/true));
  EXPECT_EQ(cat.Wait(20ms), std::nullopt);  // blocked on its stdin
  cat.Signal(SIGTERM);
  EXPECT_EQ(cat.Wait(20s), 128 + SIGTERM);
  EXPECT_EQ(cat.term_signal(), SIGTERM);
}

TEST(ChildProcessTest, KillReturns137) {
  ChildProcess cat({"/bin/cat"}, Piped(/*stdin_pipe=*/true));
  EXPECT_EQ(cat.Kill(), 128 + SIGKILL);
  EXPECT_FALSE(cat.running());
}

TEST(ChildProcessTest, ReadLineTimesOutThenSeesEndOfFile) {
  ChildProcess child({"/bin/sh", "-c", "echo first; exec cat"}, Piped(/*stdin_pipe=*/true));
  EXPECT_EQ(child.ReadLine(20s), "first");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child.ReadLine(100ms), std::nullopt);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_TRUE(child.running());
  child.CloseStdin();  // cat reads end of file and exits
  EXPECT_EQ(child.ReadLine(20s), std::nullopt);
  EXPECT_EQ(child.Wait(20s), 0);
}

TEST(ChildProcessTest, StdinPipeFeedsTheChild) {
  ChildProcess cat({"/bin/cat"}, Piped(/*stdin_pipe=*/true));
  ASSERT_TRUE(cat.WriteLine("hello"));
  EXPECT_EQ(cat.ReadLine(20s), "hello");
  ASSERT_TRUE(cat.WriteLine("again"));
  EXPECT_EQ(cat.ReadLine(20s), "again");
  cat.CloseStdin();
  EXPECT_EQ(cat.Wait(20s), 0);
}

TEST(ChildProcessTest, WritingToAChildThatExitedFailsWithoutSigpipe) {
  ChildProcess child({"/bin/sh", "-c", "exit 0"}, Piped(/*stdin_pipe=*/true));
  ASSERT_EQ(child.Wait(20s), 0);
  EXPECT_FALSE(child.WriteLine("nobody reads this"));  // SIGPIPE would end this test
}

TEST(ChildProcessTest, LogFileHoldsStdoutAndStderr) {
  TempDir dir("child_process_test");
  ASSERT_FALSE(dir.path().empty());
  const std::string log = dir.path() + "/child.log";
  ChildProcess child({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}, log);
  EXPECT_EQ(child.Wait(20s), 4);
  EXPECT_EQ(child.Log(), "out\nerr\n");
}

TEST(ChildProcessTest, StreamsCanBeDiscardedOrCapturedApart) {
  const std::string script = "echo out; echo err >&2";
  ChildProcessOptions only_err;
  only_err.out = Sink::kNull;
  only_err.err = Sink::kCapture;
  ChildProcess err({"/bin/sh", "-c", script}, only_err);
  EXPECT_EQ(err.ReadAll(20s), "err\n");
  EXPECT_EQ(err.Wait(20s), 0);

  ChildProcessOptions both = Piped();
  both.err = Sink::kCapture;
  ChildProcess merged({"/bin/sh", "-c", script}, both);
  EXPECT_EQ(merged.ReadAll(20s), "out\nerr\n");
  EXPECT_EQ(merged.Wait(20s), 0);
}

TEST(ChildProcessTest, ExtraEnvironmentReachesTheChild) {
  ChildProcessOptions o = Piped();
  o.env = {"RLSWARM_CHILD_TEST=42", "HOME=/nowhere"};
  ChildProcess child({"/bin/sh", "-c", "echo \"$RLSWARM_CHILD_TEST $HOME\""}, o);
  EXPECT_EQ(child.ReadLine(20s), "42 /nowhere");
}

TEST(ChildProcessTest, ProgramOverridesArgvZero) {
  ChildProcessOptions o = Piped();
  o.program = "/bin/sh";
  ChildProcess child({"renamed", "-c", "echo $0"}, o);
  EXPECT_EQ(child.ReadLine(20s), "renamed");
}

TEST(ChildProcessTest, AProgramThatCannotStartThrowsNamingIt) {
  try {
    ChildProcess child({"/nonexistent/program"}, ChildProcessOptions{});
    FAIL() << "started";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/program"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
}

TEST(ChildProcessTest, DestructorKillsAndReapsAStoppedChild) {
  pid_t pid = -1;
  {
    ChildProcess cat({"/bin/cat"}, Piped(/*stdin_pipe=*/true));
    pid = cat.pid();
    cat.Signal(SIGSTOP);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, WUNTRACED), pid);  // reports the stop, reaps nothing
    ASSERT_TRUE(WIFSTOPPED(status));
  }
  const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
  const int error = errno;
  EXPECT_EQ(r, -1);  // no such child: reaped
  EXPECT_EQ(error, ECHILD);
}

TEST(FilesTest, WaitForFileLineSeesALineAChildWrites) {
  TempDir dir("child_process_test");
  const std::string path = dir.path() + "/ready";
  EXPECT_EQ(WaitForFileLine(path, 20ms), "");
  ChildProcess child({"/bin/sh", "-c", "echo ready > " + path}, ChildProcessOptions{});
  EXPECT_EQ(WaitForFileLine(path, 20s), "ready");
}

TEST(FilesTest, TempDirIsRemovedWithWhatItHolds) {
  std::string path;
  {
    TempDir dir("child_process_test");
    path = dir.path();
    std::ofstream(path + "/file") << "x";
    EXPECT_TRUE(std::filesystem::exists(path + "/file"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace rlswarm::testing
