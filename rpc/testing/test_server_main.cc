// rpc_test_server: an rpc Server in its own process, for the client tests
// that kill, stop or restart the server (client_test.cc).
//
//   rpc_test_server [--endpoint tcp://127.0.0.1:*] [--hold]
//                   [--heartbeat-ms 100] [--heartbeat-timeout-ms 1000]
//
// Prints "endpoint <bound endpoint>" on stdout once it serves, then
// "held <n>" each time it holds a request. Methods:
//   echo          replies with the request's payloads
//   hold_or_echo  with --hold: never answers (the Responder is kept until
//                 exit); without: echo. Lets a test kill the server while a
//                 call is in flight, then restart it to answer the retry.
//   fail          throws InvalidArgument("requested failure")
// Runs until SIGTERM or SIGINT.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "common/logging.h"
#include "rpc/server.h"

namespace {

using rlswarm::rpc::Request;
using rlswarm::rpc::Responder;

int ToInt(const char* text) { return std::atoi(text); }

}  // namespace

int main(int argc, char** argv) {
  rlswarm::rpc::ServerOptions options;
  options.name = "test-server";
  bool hold = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--endpoint" && has_value) {
      options.endpoint = argv[++i];
    } else if (arg == "--hold") {
      hold = true;
    } else if (arg == "--heartbeat-ms" && has_value) {
      options.heartbeat_interval = std::chrono::milliseconds(ToInt(argv[++i]));
    } else if (arg == "--heartbeat-timeout-ms" && has_value) {
      options.heartbeat_timeout = std::chrono::milliseconds(ToInt(argv[++i]));
    } else {
      std::fprintf(stderr, "rpc_test_server: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  rlswarm::InitLogging("rpc-test-server", spdlog::level::warn);

  // Block the stop signals in every thread; main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::mutex held_mutex;
  std::vector<Responder> held;  // guarded by held_mutex
  {
    rlswarm::rpc::Server server(options);
    server.Register("echo", [](Request request, Responder responder) {
      responder.Reply(std::move(request.payloads));
    });
    server.Register("hold_or_echo", [&](Request request, Responder responder) {
      if (!hold) {
        responder.Reply(std::move(request.payloads));
        return;
      }
      std::lock_guard lock(held_mutex);
      held.push_back(responder);
      std::printf("held %zu\n", held.size());
      std::fflush(stdout);
    });
    server.Register(
        "fail", [](Request, Responder) { throw rlswarm::InvalidArgument("requested failure"); });
    server.Start();
    std::printf("endpoint %s\n", server.endpoint().c_str());
    std::fflush(stdout);

    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.Stop();
  }
  return 0;
}
