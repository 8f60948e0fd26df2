#pragma once

// rpc_bench internals, shared by its parts:
//   rpc_bench.cc          the driver (flags, cases, output)
//   rpc_bench_common.cc   measurement and process plumbing, CURVE keys
//   rpc_bench_process.cc  the server process: echo servers and subscribers
//   rpc_bench_raw.cc      the raw ZeroMQ baselines
//   rpc_bench_rpc.cc      the same cases through rlswarm::rpc
//   rpc_bench_report.cc   JSON and the table
// Single-threaded driver; see each function for the threads it starts.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/errors.h"
#include "common/testing/child_process.h"
#include "rpc/security.h"
#include "rpc/server.h"

namespace rlswarm::bench {

namespace rpc = rlswarm::rpc;
using Clock = std::chrono::steady_clock;

inline constexpr int kSubscribers = 4;
inline constexpr std::size_t kBroadcastBytes = 50'000'000;
inline constexpr std::chrono::milliseconds kIoTimeout{10000};   // any single wait; a hang fails
inline constexpr std::chrono::milliseconds kPollInterval{100};  // child threads check `stop`

// ------------------------------------------------------------- measurement

struct Measurement {
  double per_sec = 0;
  double p50_us = 0;
  // CPU time of both processes (all threads) per call or broadcast: steadier
  // than throughput on a shared 2-vCPU machine, and what the rpc layer adds.
  double cpu_us = 0;
};

// What one measuring run saw; runs of the same side add up (Merge) before
// they become a Measurement.
struct Sample {
  std::int64_t done = 0;  // calls (or broadcasts) completed while measuring
  double seconds = 0;
  double cpu_seconds = 0;
  std::vector<double> latencies_us;

  void Merge(Sample other);
  Measurement Summary() const;  // throws Internal if nothing completed
};

using CpuClock = std::function<double()>;  // CPU seconds used so far

double MedianUs(std::vector<double> us);
inline double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Binds the calling thread, and every thread it creates from now on, to one
// CPU. False (nothing changed) if the machine has no such CPU.
bool PinToCpu(int cpu);

// Same-run yardstick for the large-message cases: how fast this machine
// hands out fresh memory (first touch of newly mapped pages), GB/s.
double FirstTouchGBPerSec();

// Keeps `in_flight` calls outstanding for `seconds`: `send()` starts one,
// `wait_oldest()` blocks until the oldest finishes. Calls complete in order
// on one connection, so the oldest send time belongs to the reply.
template <class Send, class WaitOldest>
Sample RunClosedLoop(int in_flight, double seconds, const CpuClock& cpu, Send&& send,
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
  Sample sample;
  sample.done = done;
  sample.seconds = std::chrono::duration<double>(now - start).count();
  sample.cpu_seconds = cpu() - cpu_start;
  sample.latencies_us = std::move(latencies_us);
  for (std::size_t i = 0; i < sent.size(); ++i) wait_oldest();  // drain, not counted
  return sample;
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

// ------------------------------------------------------- process plumbing

// A pipe line protocol between the two processes (rare, tiny messages).
void WriteLine(int fd, const std::string& line);
// nullopt at end of file (the other process is gone).
std::optional<std::string> ReadLine(int fd);
std::vector<std::string> Split(const std::string& line);

// A frame over `bytes` that ZeroMQ sends without copying; `bytes` must
// outlive the send.
zmq::message_t ZeroCopy(const std::vector<std::byte>& bytes);
// linger 0, no size limit, receive timeout kPollInterval.
void ConfigureRawSocket(zmq::socket_t& s);
// The ZMTP heartbeats an rpc::Client and rpc::Server use by default, on a
// raw request/reply socket (--raw-heartbeats).
void EnableRpcHeartbeats(zmq::socket_t& s);
// A PULL socket bound to a free port (its endpoint in `endpoint`) for acks.
zmq::socket_t BindAcks(zmq::context_t& ctx, std::string* endpoint);

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
// Generates both key pairs into a fresh temporary directory.
CurveKeys MakeCurveKeys();
// The keys MakeCurveKeys wrote into `dir` (the server process reads them).
CurveKeys ReadCurveKeys(const std::string& dir);

// The server process's side (rpc_bench --serve): pins itself to `cpu` if
// given, binds every server, reports "endpoints RAW RAW_CURVE RPC
// RPC_CURVE" ("-" for one that failed) on stdout, then serves the broadcast
// commands read from stdin until it closes. Returns the exit code.
int RunServerProcess(const std::string& keys_dir, bool echo_on_workers, bool raw_heartbeats,
                     std::optional<int> cpu);

// The child process that hosts every server (raw and rpc, plain and CURVE)
// and, on command, the broadcast subscribers: this binary re-executed with
// --serve by the constructor (spawned, not forked, so it may start at any
// time), its stdin and stdout the control pipe; killed with the parent
// (PR_SET_PDEATHSIG) and by the destructor.
class ServerProcess {
 public:
  // `echo_on_workers`: the rpc echo handler runs on the server's worker
  // threads instead of its I/O thread.
  // `raw_heartbeats`: the raw ROUTERs use rpc's ZMTP heartbeats.
  // `cpu`: pin the server process (all its threads) to this CPU.
  // `log_level`: the server process's (a ParseLogLevel name).
  // Waits up to kStartTimeout for the servers' endpoints; throws Unavailable
  // if they do not come.
  ServerProcess(const CurveKeys& keys, bool echo_on_workers, bool raw_heartbeats,
                std::optional<int> cpu, const std::string& log_level);
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();  // closes the control pipe, waits up to 5 s, then SIGKILL

  // CPU seconds used so far by this process and the server process together
  // (the child's at the kernel's clock tick, 10 ms).
  double CpuSeconds() const;

  const std::string& raw(bool curve) const { return endpoints_[curve ? 1 : 0]; }
  // nullopt if the child could not start that rpc server.
  std::optional<std::string> rpc(bool curve) const {
    const auto& e = endpoints_[curve ? 3 : 2];
    return e == "-" ? std::nullopt : std::optional(e);
  }

  // Sends a command and waits up to kIoTimeout for its "ok"; throws
  // Unavailable otherwise.
  void Command(const std::string& command);

 private:
  // Start-up: exec, then binding four servers on a busy machine.
  static constexpr std::chrono::seconds kStartTimeout{60};

  testing::ChildProcess child_;
  std::vector<std::string> endpoints_;
};

// -------------------------------------------------------------- the cases

// Raw ZeroMQ (rpc_bench_raw.cc). RawEchoLoop runs in the child until `stop`.
void RawEchoLoop(zmq::socket_t& router, const std::atomic<bool>& stop);
// One side of a request/reply case, connected once and measured in rounds
// that alternate with the other side's (so both see the same machine).
class RequestReplySide {
 public:
  virtual ~RequestReplySide() = default;
  virtual Sample Run(double seconds) = 0;
};

std::unique_ptr<RequestReplySide> RawRequestReply(zmq::context_t& ctx, const ServerProcess& server,
                                                  std::size_t bytes, int in_flight,
                                                  const CurveKeys* keys, bool heartbeats);
Measurement RawBroadcast(zmq::context_t& ctx, ServerProcess& child, double seconds);

// rlswarm::rpc (rpc_bench_rpc.cc). StartRpcEchoServer runs in the child.
std::unique_ptr<rpc::Server> StartRpcEchoServer(const CurveKeys* keys, bool echo_on_workers);
// How the rpc side keeps its calls in flight.
enum class RpcApi {
  kInvoke,     // one at a time: Client::Invoke
  kCallAsync,  // a pipeline: each completion (on the I/O thread) starts the next CallAsync
  kCall,       // Call futures from the measuring thread, the oldest awaited
};
const char* RpcApiName(RpcApi api);
std::unique_ptr<RequestReplySide> RpcRequestReply(const ServerProcess& server, std::size_t bytes,
                                                  int in_flight, RpcApi api, const CurveKeys* keys);
Measurement RpcBroadcast(zmq::context_t& ctx, ServerProcess& child, double seconds);

// ------------------------------------------------------------------ report

struct Result {
  std::string name;
  std::size_t payload_bytes = 0;
  int in_flight = 1;
  bool curve = false;
  RpcApi api = RpcApi::kInvoke;
  std::optional<Measurement> raw, rpc;
};

std::string SizeName(std::size_t bytes);
nlohmann::json ToJson(const std::vector<Result>& results, double seconds, int rounds,
                      const std::string& placement, double first_touch, bool echo_on_workers,
                      bool raw_heartbeats);
void PrintTable(const std::vector<Result>& results);

}  // namespace rlswarm::bench
