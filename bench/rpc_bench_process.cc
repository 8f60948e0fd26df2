// rpc_bench: the child process that hosts the servers and subscribers, and
// the parent's handle on it.

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <zmq_addon.hpp>

#include "bench/rpc_bench.h"
#include "common/logging.h"
#include "rpc/broadcast.h"

namespace rlswarm::bench {
namespace {

// 4 subscriber threads that ack every version they receive to `ack_endpoint`
// with [subscriber index, version] (two uint64).
class SubscriberGroup {
 public:
  // command: "subs raw PUB ACK" or "subs rpc PUB SNAPSHOT ACK".
  SubscriberGroup(zmq::context_t& ctx, const std::vector<std::string>& command) {
    try {
      for (int i = 0; i < kSubscribers; ++i) Start(ctx, command, i);
    } catch (...) {
      Stop();  // join the ones already running
      throw;
    }
  }
  ~SubscriberGroup() { Stop(); }

 private:
  // Starts subscriber `i`: its thread owns its sockets.
  void Start(zmq::context_t& ctx, const std::vector<std::string>& command, int i) {
    auto ack = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::push);
    ConfigureRawSocket(*ack);
    ack->connect(command.back());
    if (command.at(1) == "raw") {
      auto sub = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::sub);
      ConfigureRawSocket(*sub);
      sub->set(zmq::sockopt::subscribe, "");
      sub->connect(command.at(2));
      threads_.emplace_back([this, i, sub = std::move(sub), ack = std::move(ack)] {
        std::vector<zmq::message_t> frames;
        while (!stop_) {
          frames.clear();
          if (!zmq::recv_multipart(*sub, std::back_inserter(frames))) continue;
          std::uint64_t version = 0;
          std::memcpy(&version, frames.at(0).data(), sizeof(version));
          Ack(*ack, i, version);
        }
      });
    } else {
      rpc::SubscriberOptions o;
      o.endpoint = command.at(2);
      o.snapshot_endpoint = command.at(3);
      o.name = "bench-subscriber-" + std::to_string(i);
      auto sub = std::make_shared<rpc::Subscriber>(o);
      threads_.emplace_back([this, i, sub, ack = std::move(ack)] {
        std::uint64_t last = 0;
        while (!stop_) {
          if (auto blob = sub->WaitNewer(last, kPollInterval)) {
            last = blob->version;
            Ack(*ack, i, last);
          }
        }
      });
    }
  }

  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  static void Ack(zmq::socket_t& ack, int index, std::uint64_t version) {
    const std::uint64_t words[2] = {static_cast<std::uint64_t>(index), version};
    ack.send(zmq::buffer(words, sizeof(words)), zmq::send_flags::none);
  }

  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

int RunServerProcess(const std::string& keys_dir, bool echo_on_workers, bool raw_heartbeats,
                     std::optional<int> cpu) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the measuring process
  // Pinned before any thread exists: ZeroMQ's I/O threads and the servers'
  // workers inherit the CPU.
  if (cpu && !PinToCpu(*cpu))
    std::cerr << "rpc_bench: cannot pin the server to CPU " << *cpu << "\n";
  const int control_fd = STDIN_FILENO;
  const int report_fd = STDOUT_FILENO;
  int status = 0;
  try {
    const CurveKeys keys = ReadCurveKeys(keys_dir);
    zmq::context_t ctx(1);
    std::atomic<bool> stop{false};
    std::vector<std::string> endpoints;
    std::vector<std::unique_ptr<zmq::socket_t>> routers;
    for (bool curve : {false, true}) {
      auto router = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::router);
      ConfigureRawSocket(*router);
      if (raw_heartbeats) EnableRpcHeartbeats(*router);
      if (curve) {
        router->set(zmq::sockopt::curve_server, 1);
        router->set(zmq::sockopt::curve_secretkey, keys.server.secret_key);
      }
      router->bind("tcp://127.0.0.1:*");
      endpoints.push_back(router->get(zmq::sockopt::last_endpoint));
      routers.push_back(std::move(router));
    }
    std::vector<std::thread> echo_threads;
    for (auto& r : routers) echo_threads.emplace_back([&r, &stop] { RawEchoLoop(*r, stop); });

    std::vector<std::unique_ptr<rpc::Server>> servers;
    for (bool curve : {false, true}) {
      try {
        auto server = StartRpcEchoServer(curve ? &keys : nullptr, echo_on_workers);
        endpoints.push_back(server->endpoint());
        servers.push_back(std::move(server));
      } catch (const std::exception& e) {
        std::cerr << "rpc_bench: rpc server" << (curve ? " (curve)" : "")
                  << " unavailable: " << e.what() << "\n";
        endpoints.push_back("-");
      }
    }
    std::string line = "endpoints";
    for (const auto& e : endpoints) line += " " + e;
    WriteLine(report_fd, line);

    std::unique_ptr<SubscriberGroup> subscribers;
    while (auto command = ReadLine(control_fd)) {
      const auto words = Split(*command);
      if (words.empty()) continue;
      if (words[0] == "subs") {
        try {
          subscribers = std::make_unique<SubscriberGroup>(ctx, words);
          WriteLine(report_fd, "ok");
        } catch (const std::exception& e) {
          WriteLine(report_fd, std::string("error ") + e.what());
        }
      } else if (words[0] == "stop_subs") {
        subscribers.reset();
        WriteLine(report_fd, "ok");
      }
    }
    subscribers.reset();
    for (auto& s : servers) s->Stop();
    stop = true;
    for (auto& t : echo_threads) t.join();
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench server process: " << e.what() << "\n";
    status = 1;
  }
  return status;
}

ServerProcess::ServerProcess(const CurveKeys& keys, bool echo_on_workers, bool raw_heartbeats,
                             std::optional<int> cpu, const std::string& log_level)
    : child_(
          [&] {
            std::vector<std::string> argv = {"rpc_bench", "--serve",     "--keys-dir",
                                             keys.dir,    "--log-level", log_level};
            if (echo_on_workers) argv.push_back("--echo-on-workers");
            if (raw_heartbeats) argv.push_back("--raw-heartbeats");
            if (cpu) {
              argv.push_back("--server-cpu");
              argv.push_back(std::to_string(*cpu));
            }
            return argv;
          }(),
          [] {
            // Its stdin and stdout are the control pipe and the report pipe.
            testing::ChildProcessOptions o;
            o.program = "/proc/self/exe";
            o.out = testing::ChildProcessOptions::Sink::kCapture;
            o.stdin_pipe = true;
            return o;
          }()) {
  const auto line = child_.ReadLine(kStartTimeout);
  const auto words = Split(line.value_or(""));
  if (words.size() != 5 || words[0] != "endpoints") {
    throw rlswarm::Unavailable("server process failed to start");
  }
  endpoints_.assign(words.begin() + 1, words.end());
}

ServerProcess::~ServerProcess() {
  child_.CloseStdin();                   // the child's cue to stop
  child_.Wait(std::chrono::seconds(5));  // then child_'s destructor kills it
}

double ServerProcess::CpuSeconds() const {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  double seconds = self.ru_utime.tv_sec + self.ru_stime.tv_sec +
                   (self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
  std::ifstream stat("/proc/" + std::to_string(child_.pid()) + "/stat");
  std::string line;
  std::getline(stat, line);
  // Fields after "(comm) ": state ppid ... utime (14th field) stime (15th).
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return seconds + static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

void ServerProcess::Command(const std::string& command) {
  if (!child_.WriteLine(command)) throw rlswarm::Unavailable("server process: gone");
  const auto reply = child_.ReadLine(kIoTimeout);
  if (reply != "ok") throw rlswarm::Unavailable("server process: " + reply.value_or("gone"));
}

}  // namespace rlswarm::bench
