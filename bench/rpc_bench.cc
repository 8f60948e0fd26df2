// rpc_bench: the rpc layer against raw ZeroMQ, measured in the same run.
//
//   rpc_bench [--json] [--seconds S] [--cases REGEX] [--skip-broadcast] [--log-level L]
//
// Request/reply ("reqrep_<size>_k<in flight>", and "curve_reqrep_..." with
// CURVE on): 64 B, 64 KiB and 1 MiB payloads echoed back, 1 or 16 calls in
// flight, over tcp://127.0.0.1.
//   raw: a DEALER sends the payload as one zero-copy frame; a ROUTER echoes
//        the frames it received (moved, not copied). CURVE: the zmq socket
//        options directly, no ZAP handler.
//   rpc: rpc::Client calls "echo" on an rpc::Server whose handler replies
//        with the request's payloads. CURVE: rpc::SecurityOptions with keys
//        generated for this run (ZAP-authenticated).
// Broadcast ("broadcast_50MB_4subs"): one 50 MB blob published to 4
// subscribers, timed until all 4 hold it; raw PUB/SUB vs rpc::Publisher and
// rpc::Subscriber.
//
// The servers (and the subscribers) run in a child process forked before
// this process creates any thread; the measuring client runs here. A control
// pipe carries the child's endpoints back, and broadcast commands to it.
//
// JSON: {"results": [{"case", "payload_bytes", "in_flight", "curve",
//   "raw_per_sec", "rpc_per_sec", "raw_p50_us", "rpc_p50_us", "raw_cpu_us",
//   "rpc_cpu_us"}, ...],
//   "baseline": {"first_touch_GB_per_sec"}, ...}; a side that failed has null
// figures and its error on stderr.

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/errors.h"
#include "common/logging.h"
#include "rpc/broadcast.h"
#include "rpc/client.h"
#include "rpc/payload.h"
#include "rpc/security.h"
#include "rpc/server.h"

namespace {

namespace rpc = rlswarm::rpc;
using Clock = std::chrono::steady_clock;
using rlswarm::DType;

constexpr int kSubscribers = 4;
constexpr std::size_t kBroadcastBytes = 50'000'000;
constexpr std::chrono::milliseconds kIoTimeout{10000};   // any single wait; a hang fails the case
constexpr std::chrono::milliseconds kPollInterval{100};  // how often child threads check `stop`

// ------------------------------------------------------------- utilities

struct Measurement {
  double per_sec = 0;
  double p50_us = 0;
  // CPU time of both processes (all threads) per call or broadcast: steadier
  // than throughput on a shared 2-vCPU machine, and what the rpc layer adds.
  double cpu_us = 0;
};

using CpuClock = std::function<double()>;  // CPU seconds used so far

double MedianUs(std::vector<double> us) {
  if (us.empty()) return 0;
  const auto mid = us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2);
  std::nth_element(us.begin(), mid, us.end());
  return *mid;
}

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// A pipe line protocol between the two processes (rare, tiny messages).
void WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) throw rlswarm::Unavailable("control pipe closed");
    done += static_cast<std::size_t>(n);
  }
}

// nullopt at end of file (the other process is gone).
std::optional<std::string> ReadLine(int fd) {
  std::string line;
  char c;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

void NoFree(void*, void*) {}

// A frame over `bytes` that ZeroMQ sends without copying; `bytes` must
// outlive the send.
zmq::message_t ZeroCopy(const std::vector<std::byte>& bytes) {
  return zmq::message_t(const_cast<std::byte*>(bytes.data()), bytes.size(), &NoFree, nullptr);
}

void ConfigureRawSocket(zmq::socket_t& s) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::maxmsgsize, std::int64_t{-1});
  s.set(zmq::sockopt::rcvtimeo, static_cast<int>(kPollInterval.count()));
}

// Keys of this run, in files as rpc::SecurityOptions wants them.
struct CurveKeys {
  std::string dir;
  rpc::KeyPair server;
  rpc::KeyPair client;

  rpc::SecurityOptions ServerSecurity() const {
    rpc::SecurityOptions s;
    s.curve = true;
    s.server_secret_key_file = dir + "/server.key_secret";
    s.authorized_clients_dir = dir + "/clients";
    return s;
  }
  rpc::SecurityOptions ClientSecurity() const {
    rpc::SecurityOptions s;
    s.curve = true;
    s.client_secret_key_file = dir + "/client.key_secret";
    s.server_public_key_file = dir + "/server.key";
    return s;
  }
};

CurveKeys MakeCurveKeys() {
  CurveKeys k;
  std::string tmpl = (std::filesystem::temp_directory_path() / "rpc_bench_keys.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw rlswarm::Unavailable("mkdtemp failed");
  k.dir = tmpl;
  k.server = rpc::GenerateKeyPair();
  k.client = rpc::GenerateKeyPair();
  rpc::WriteKeyPair(k.dir + "/server", k.server);
  rpc::WriteKeyPair(k.dir + "/client", k.client);
  std::filesystem::create_directory(k.dir + "/clients");
  std::filesystem::copy_file(k.dir + "/client.key", k.dir + "/clients/client.key");
  return k;
}

// ------------------------------------------------- child: servers, subscribers

// Echoes every message back to its sender, moving the received frames.
void RawEchoLoop(zmq::socket_t& router, const std::atomic<bool>& stop) {
  std::vector<zmq::message_t> frames;
  while (!stop.load(std::memory_order_relaxed)) {
    frames.clear();
    if (!zmq::recv_multipart(router, std::back_inserter(frames))) continue;  // poll timeout
    zmq::send_multipart(router, frames);
  }
}

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

// The child process: binds every server, reports "endpoints RAW RAW_CURVE RPC
// RPC_CURVE" ("-" for one that failed), then serves broadcast commands until
// the control pipe closes.
[[noreturn]] void RunServerProcess(int control_fd, int report_fd, const CurveKeys& keys) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the measuring process
  // Re-tag the log lines with this process's role and pid (InitLogging
  // registers its logger by name, so the inherited one goes first).
  const auto level = spdlog::get_level();
  spdlog::drop("rlswarm");
  rlswarm::InitLogging("rpc_bench/server", level);
  int status = 0;
  try {
    zmq::context_t ctx(1);
    std::atomic<bool> stop{false};
    std::vector<std::string> endpoints;
    std::vector<std::unique_ptr<zmq::socket_t>> routers;
    for (bool curve : {false, true}) {
      auto router = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::router);
      ConfigureRawSocket(*router);
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
        rpc::ServerOptions o;
        o.name = curve ? "bench-echo-curve" : "bench-echo";
        if (curve) o.security = keys.ServerSecurity();
        auto server = std::make_unique<rpc::Server>(o);
        server->Register("echo", [](rpc::Request request, rpc::Responder responder) {
          responder.Reply(std::move(request.payloads));
        });
        server->Start();
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
  ::_exit(status);  // not exit(): the parent's atexit handlers and buffers are not ours
}

// ----------------------------------------------------------- parent: clients

class ServerProcess {
 public:
  explicit ServerProcess(const CurveKeys& keys) {
    int control[2], report[2];
    if (::pipe(control) != 0 || ::pipe(report) != 0) throw rlswarm::Unavailable("pipe failed");
    std::cout.flush();
    std::cerr.flush();
    pid_ = ::fork();
    if (pid_ < 0) throw rlswarm::Unavailable("fork failed");
    if (pid_ == 0) {
      ::close(control[1]);
      ::close(report[0]);
      RunServerProcess(control[0], report[1], keys);
    }
    ::close(control[0]);
    ::close(report[1]);
    control_fd_ = control[1];
    report_fd_ = report[0];
    const auto line = ReadLine(report_fd_);
    const auto words = Split(line.value_or(""));
    if (words.size() != 5 || words[0] != "endpoints") {
      throw rlswarm::Unavailable("server process failed to start");
    }
    endpoints_.assign(words.begin() + 1, words.end());
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    ::close(control_fd_);  // the child's cue to stop
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

  // CPU seconds used so far by this process and the server process together
  // (the child's at the kernel's clock tick, 10 ms).
  double CpuSeconds() const {
    rusage self{};
    ::getrusage(RUSAGE_SELF, &self);
    double seconds = self.ru_utime.tv_sec + self.ru_stime.tv_sec +
                     (self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string line;
    std::getline(stat, line);
    // Fields after "(comm) ": state ppid ... utime (14th field) stime (15th).
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;
    long utime = 0, stime = 0;
    fields >> utime >> stime;
    return seconds +
           static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }

  const std::string& raw(bool curve) const { return endpoints_[curve ? 1 : 0]; }
  // nullopt if the child could not start that rpc server.
  std::optional<std::string> rpc(bool curve) const {
    const auto& e = endpoints_[curve ? 3 : 2];
    return e == "-" ? std::nullopt : std::optional(e);
  }

  // Sends a command and waits for its "ok".
  void Command(const std::string& command) {
    WriteLine(control_fd_, command);
    const auto reply = ReadLine(report_fd_);
    if (reply != "ok") throw rlswarm::Unavailable("server process: " + reply.value_or("gone"));
  }

 private:
  pid_t pid_ = -1;
  int control_fd_ = -1;
  int report_fd_ = -1;
  std::vector<std::string> endpoints_;
};

// Keeps `in_flight` calls outstanding for `seconds`: `send()` starts one,
// `wait_oldest()` blocks until the oldest finishes. Calls complete in order
// on one connection, so the oldest send time belongs to the reply.
template <class Send, class WaitOldest>
Measurement RunClosedLoop(int in_flight, double seconds, const CpuClock& cpu, Send&& send,
                          WaitOldest&& wait_oldest) {
  for (int i = 0; i < 20; ++i) {  // warm up: connection, handshakes, allocator
    send();
    wait_oldest();
  }
  std::deque<Clock::time_point> sent;
  std::vector<double> latencies_us;
  for (int i = 0; i < in_flight; ++i) {
    sent.push_back(Clock::now());
    send();
  }
  const double cpu_start = cpu();
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::int64_t done = 0;
  auto now = start;
  while (now < end) {
    wait_oldest();
    now = Clock::now();
    latencies_us.push_back(Us(now - sent.front()));
    sent.pop_front();
    ++done;
    sent.push_back(now);
    send();
  }
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double cpu_us = (cpu() - cpu_start) * 1e6 / static_cast<double>(done);
  for (std::size_t i = 0; i < sent.size(); ++i) wait_oldest();  // drain, not counted
  return {done / elapsed, MedianUs(std::move(latencies_us)), cpu_us};
}

Measurement RawRequestReply(zmq::context_t& ctx, const ServerProcess& server, std::size_t bytes,
                            int in_flight, double seconds, const CurveKeys* keys) {
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  ConfigureRawSocket(dealer);
  dealer.set(zmq::sockopt::rcvtimeo, static_cast<int>(kIoTimeout.count()));
  if (keys != nullptr) {
    dealer.set(zmq::sockopt::curve_serverkey, keys->server.public_key);
    dealer.set(zmq::sockopt::curve_publickey, keys->client.public_key);
    dealer.set(zmq::sockopt::curve_secretkey, keys->client.secret_key);
  }
  dealer.connect(server.raw(keys != nullptr));
  const std::vector<std::byte> payload(bytes, std::byte{0x5a});
  zmq::message_t reply;
  return RunClosedLoop(
      in_flight, seconds, [&] { return server.CpuSeconds(); },
      [&] {
        auto frame = ZeroCopy(payload);
        dealer.send(frame, zmq::send_flags::none);
      },
      [&] {
        if (!dealer.recv(reply) || reply.size() != bytes || reply.more()) {
          throw rlswarm::Unavailable("raw echo: no reply or a wrong one");
        }
      });
}

Measurement RpcRequestReply(const ServerProcess& server, std::size_t bytes, int in_flight,
                            double seconds, const CurveKeys* keys) {
  rpc::ClientOptions o;
  o.endpoint = server.rpc(keys != nullptr).value();
  o.default_timeout = kIoTimeout;
  o.name = "bench-client";
  if (keys != nullptr) o.security = keys->ClientSecurity();
  rpc::Client client(o);
  const auto payload = rpc::Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(bytes)},
                                                std::vector<std::uint8_t>(bytes, 0x5a));
  std::deque<std::future<rpc::Reply>> pending;
  return RunClosedLoop(
      in_flight, seconds, [&] { return server.CpuSeconds(); },
      [&] { pending.push_back(client.Call("echo", {payload})); },
      [&] {
        const rpc::Reply reply = pending.front().get();
        pending.pop_front();
        if (reply.payloads.size() != 1 || reply.payloads[0].bytes().size() != bytes) {
          throw rlswarm::Internal("rpc echo: wrong reply");
        }
      });
}

// Publishes versions through `publish(version, big)` and times each one
// until all subscribers have acked it on `acks`.
template <class Publish>
Measurement RunBroadcast(zmq::socket_t& acks, double seconds, const CpuClock& cpu,
                         Publish&& publish) {
  std::uint64_t version = 0;
  auto ack = [&]() -> std::pair<std::uint64_t, std::uint64_t> {
    std::uint64_t words[2];
    auto got = acks.recv(zmq::buffer(words, sizeof(words)));
    if (!got) return {kSubscribers, 0};  // poll timeout
    return {words[0], words[1]};
  };
  // Publishes version `v` and waits up to `timeout` for all subscribers to
  // ack it. One version at a time, so no queue ever holds two and PUB's
  // high-water mark never drops one.
  auto deliver = [&](std::uint64_t v, bool big, std::chrono::milliseconds timeout) {
    publish(v, big);
    const auto until = Clock::now() + timeout;
    int received = 0;
    while (received < kSubscribers && Clock::now() < until) {
      if (ack().second == v) ++received;  // late acks of earlier versions are ignored
    }
    return received == kSubscribers;
  };
  // Subscribers join asynchronously and PUB drops what is sent before they
  // are connected: publish small versions until one reaches all of them.
  const auto join_deadline = Clock::now() + kIoTimeout;
  while (!deliver(++version, false, std::chrono::milliseconds(200))) {
    if (Clock::now() > join_deadline) throw rlswarm::DeadlineExceeded("subscribers did not join");
  }
  std::vector<double> latencies_us;
  const double cpu_start = cpu();
  const auto start = Clock::now();
  auto now = start;
  while (now - start < std::chrono::duration<double>(seconds) || latencies_us.size() < 3) {
    const auto t0 = Clock::now();
    if (!deliver(++version, true, kIoTimeout)) {
      throw rlswarm::DeadlineExceeded("a subscriber did not receive version " +
                                      std::to_string(version));
    }
    now = Clock::now();
    latencies_us.push_back(Us(now - t0));
  }
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double cpu_us = (cpu() - cpu_start) * 1e6 / static_cast<double>(latencies_us.size());
  return {latencies_us.size() / elapsed, MedianUs(std::move(latencies_us)), cpu_us};
}

zmq::socket_t BindAcks(zmq::context_t& ctx, std::string* endpoint) {
  zmq::socket_t acks(ctx, zmq::socket_type::pull);
  ConfigureRawSocket(acks);
  acks.bind("tcp://127.0.0.1:*");
  *endpoint = acks.get(zmq::sockopt::last_endpoint);
  return acks;
}

Measurement RawBroadcast(zmq::context_t& ctx, ServerProcess& child, double seconds) {
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  ConfigureRawSocket(pub);
  pub.bind("tcp://127.0.0.1:*");
  std::string ack_endpoint;
  zmq::socket_t acks = BindAcks(ctx, &ack_endpoint);
  child.Command("subs raw " + pub.get(zmq::sockopt::last_endpoint) + " " + ack_endpoint);
  // One frame per version, its first 8 bytes the version (single-frame, as
  // rpc::Publisher sends, and libzmq #3442 bites multipart PUB messages).
  // Rewriting the version in place is safe: the previous version has been
  // acked by every subscriber, so ZeroMQ has sent it.
  std::vector<std::byte> blob(kBroadcastBytes, std::byte{0x5a});
  const auto cpu = [&] { return child.CpuSeconds(); };
  const auto m = RunBroadcast(acks, seconds, cpu, [&](std::uint64_t version, bool big) {
    if (!big) {
      pub.send(zmq::buffer(&version, sizeof(version)), zmq::send_flags::none);
      return;
    }
    std::memcpy(blob.data(), &version, sizeof(version));
    auto frame = ZeroCopy(blob);
    pub.send(frame, zmq::send_flags::none);
  });
  child.Command("stop_subs");
  return m;
}

Measurement RpcBroadcast(zmq::context_t& ctx, ServerProcess& child, double seconds) {
  rpc::PublisherOptions o;
  o.name = "bench-publisher";
  rpc::Publisher publisher(o);
  std::string ack_endpoint;
  zmq::socket_t acks = BindAcks(ctx, &ack_endpoint);
  child.Command("subs rpc " + publisher.endpoint() + " " + publisher.snapshot_endpoint() + " " +
                ack_endpoint);
  const auto blob =
      rpc::Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(kBroadcastBytes)},
                               std::vector<std::uint8_t>(kBroadcastBytes, 0x5a));
  const auto small = rpc::Payload::FromString("");
  Measurement m;
  try {
    const auto cpu = [&] { return child.CpuSeconds(); };
    m = RunBroadcast(acks, seconds, cpu, [&](std::uint64_t version, bool big) {
      publisher.Publish(version, {big ? blob : small});
    });
  } catch (...) {
    child.Command("stop_subs");
    throw;
  }
  child.Command("stop_subs");
  return m;
}

// ------------------------------------------------------------------- driver

// Same-run yardstick for the large-message cases: how fast this machine
// hands out fresh memory (first touch of newly mapped pages). Receiving a
// 50 MB message writes into a fresh malloc'd (mmapped) buffer, so on a VM
// where a page fault is slow this, not ZeroMQ, bounds the broadcast.
double FirstTouchGBPerSec() {
  constexpr std::size_t kBytes = 32 << 20;
  const auto start = Clock::now();
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  auto* bytes = static_cast<volatile char*>(p);
  for (std::size_t i = 0; i < kBytes; i += 4096) bytes[i] = 1;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::munmap(p, kBytes);
  return kBytes / seconds / 1e9;
}

struct Result {
  std::string name;
  std::size_t payload_bytes = 0;
  int in_flight = 1;
  bool curve = false;
  std::optional<Measurement> raw, rpc;
};

std::string SizeName(std::size_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= (1 << 10)) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

// Runs `f`; on failure reports the error and leaves the figure empty.
template <class F>
std::optional<Measurement> Try(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench: " << what << " failed: " << e.what() << "\n";
    return std::nullopt;
  }
}

nlohmann::json ToJson(const std::vector<Result>& results, double seconds, double first_touch) {
  auto figure = [](const std::optional<Measurement>& m, double Measurement::*field) {
    return m ? nlohmann::json(m.value().*field) : nlohmann::json(nullptr);
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    rows.push_back({{"case", r.name},
                    {"payload_bytes", r.payload_bytes},
                    {"in_flight", r.in_flight},
                    {"curve", r.curve},
                    {"raw_per_sec", figure(r.raw, &Measurement::per_sec)},
                    {"rpc_per_sec", figure(r.rpc, &Measurement::per_sec)},
                    {"raw_p50_us", figure(r.raw, &Measurement::p50_us)},
                    {"rpc_p50_us", figure(r.rpc, &Measurement::p50_us)},
                    {"raw_cpu_us", figure(r.raw, &Measurement::cpu_us)},
                    {"rpc_cpu_us", figure(r.rpc, &Measurement::cpu_us)}});
  }
  return {{"results", rows},
          {"baseline", {{"first_touch_GB_per_sec", first_touch}}},
          {"seconds_per_case", seconds},
          {"server", "separate process (fork), tcp://127.0.0.1"}};
}

void PrintTable(const std::vector<Result>& results) {
  // Three significant digits at least: a broadcast runs ~1/s, a 64 B call ~10^4/s.
  auto num = [](const std::optional<Measurement>& m, double Measurement::*field) {
    if (!m) return std::string("-");
    const double x = m.value().*field;
    return x < 100 ? fmt::format("{:.3g}", x) : fmt::format("{:.0f}", x);
  };
  fmt::print("{:<24} {:>9} {:>9} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9}\n", "case", "raw/s", "rpc/s",
             "rpc/raw", "raw p50us", "rpc p50us", "delta", "raw cpu", "rpc cpu");
  for (const auto& r : results) {
    const bool both = r.raw && r.rpc;
    fmt::print("{:<24} {:>9} {:>9} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9}\n", r.name,
               num(r.raw, &Measurement::per_sec), num(r.rpc, &Measurement::per_sec),
               both ? fmt::format("{:.0f}%", 100 * r.rpc->per_sec / r.raw->per_sec) : "-",
               num(r.raw, &Measurement::p50_us), num(r.rpc, &Measurement::p50_us),
               both ? fmt::format("{:+.0f}", r.rpc->p50_us - r.raw->p50_us) : "-",
               num(r.raw, &Measurement::cpu_us), num(r.rpc, &Measurement::cpu_us));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rpc layer vs raw ZeroMQ: request/reply, CURVE and broadcast"};
  bool json = false;
  bool skip_broadcast = false;
  double seconds = 1.0;
  std::string cases = ".*";
  std::string log_level = "warn";
  app.add_flag("--json", json, "Print JSON");
  app.add_option("--seconds", seconds, "Seconds per case and side")->check(CLI::PositiveNumber);
  app.add_option("--cases", cases, "Run only cases whose name matches this regex");
  app.add_flag("--skip-broadcast", skip_broadcast, "Skip the 50 MB broadcast case");
  app.add_option("--log-level", log_level, "rpc library log level (to stderr)");
  CLI11_PARSE(app, argc, argv);
  rlswarm::InitLogging("rpc_bench", rlswarm::ParseLogLevel(log_level));
  const std::regex filter(cases);

  // Keys and the fork come first: no thread may exist when the child is forked.
  const CurveKeys keys = MakeCurveKeys();
  const double first_touch = FirstTouchGBPerSec();
  std::vector<Result> results;
  int status = 0;
  try {
    ServerProcess child(keys);
    zmq::context_t ctx(1);
    for (bool curve : {false, true}) {
      for (std::size_t bytes : {std::size_t{64}, std::size_t{64} << 10, std::size_t{1} << 20}) {
        for (int in_flight : {1, 16}) {
          Result r;
          r.name =
              fmt::format("{}reqrep_{}_k{}", curve ? "curve_" : "", SizeName(bytes), in_flight);
          if (!std::regex_search(r.name, filter)) continue;
          r.payload_bytes = bytes;
          r.in_flight = in_flight;
          r.curve = curve;
          const CurveKeys* k = curve ? &keys : nullptr;
          r.raw = Try(r.name + " raw",
                      [&] { return RawRequestReply(ctx, child, bytes, in_flight, seconds, k); });
          if (child.rpc(curve)) {
            r.rpc = Try(r.name + " rpc",
                        [&] { return RpcRequestReply(child, bytes, in_flight, seconds, k); });
          }
          results.push_back(std::move(r));
        }
      }
    }
    Result b;
    b.name = fmt::format("broadcast_50MB_{}subs", kSubscribers);
    if (!skip_broadcast && std::regex_search(b.name, filter)) {
      b.payload_bytes = kBroadcastBytes;
      b.in_flight = kSubscribers;  // subscribers receiving each broadcast
      b.raw = Try(b.name + " raw", [&] { return RawBroadcast(ctx, child, seconds); });
      b.rpc = Try(b.name + " rpc", [&] { return RpcBroadcast(ctx, child, seconds); });
      results.push_back(std::move(b));
    }
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench: " << e.what() << "\n";
    status = 1;
  }
  std::filesystem::remove_all(keys.dir);
  if (json) {
    std::cout << ToJson(results, seconds, first_touch).dump(2) << "\n";
  } else {
    PrintTable(results);
    fmt::print("cpu: CPU us per call (broadcast: per broadcast) of both processes\n");
    fmt::print("baseline: first touch of fresh memory {:.2f} GB/s\n", first_touch);
  }
  return status;
}
