// rpc_bench: the same cases through rlswarm::rpc.

#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench/rpc_bench.h"
#include "common/dtype.h"
#include "common/payload.h"
#include "rpc/broadcast.h"
#include "rpc/client.h"

namespace rlswarm::bench {

using rlswarm::DType;

std::unique_ptr<rpc::Server> StartRpcEchoServer(const CurveKeys* keys, bool echo_on_workers) {
  rpc::ServerOptions o;
  o.name = keys != nullptr ? "bench-echo-curve" : "bench-echo";
  if (keys != nullptr) o.security = keys->ServerSecurity();
  auto server = std::make_unique<rpc::Server>(o);
  // A cheap, non-blocking handler: by default it runs on the I/O thread, as
  // replay's insert and sample handlers do.
  server->Register(
      "echo",
      [](rpc::Request request, rpc::Responder responder) {
        responder.Reply(std::move(request.payloads));
      },
      rpc::HandlerOptions{.run_on_io_thread = !echo_on_workers});
  server->Start();
  return server;
}

const char* RpcApiName(RpcApi api) {
  switch (api) {
    case RpcApi::kInvoke:
      return "Invoke";
    case RpcApi::kCallAsync:
      return "CallAsync pipeline";
    case RpcApi::kCall:
      return "Call futures";
  }
  return "?";
}

namespace {

// Throws Internal unless `reply` is the echo of one `bytes`-byte payload.
void CheckEcho(const rpc::Reply& reply, std::size_t bytes) {
  if (reply.payloads.size() != 1 || reply.payloads[0].bytes().size() != bytes) {
    throw rlswarm::Internal("rpc echo: wrong reply");
  }
}

// Keeps `in_flight` CallAsync calls outstanding for `seconds`: each
// completion, on the client's I/O thread, records its round trip and starts
// the next call. The measuring thread only sleeps.
Sample RunCallbackPipeline(rpc::Client& client, const Payload& payload, std::size_t bytes,
                           int in_flight, double seconds, const CpuClock& cpu) {
  struct Pipeline {
    std::mutex mu;
    std::condition_variable idle;
    int outstanding = 0;       // guarded by mu
    std::exception_ptr error;  // guarded by mu: the first failure
    std::atomic<bool> measuring{false};
    std::atomic<bool> stopping{false};
    std::vector<double> latencies_us;  // I/O thread only, until drained
    std::int64_t done = 0;             // likewise
  } p;
  std::function<void()> start_one = [&] {
    const auto sent = Clock::now();
    client.CallAsync("echo", {payload}, {}, [&, sent](rpc::Reply* reply, std::exception_ptr error) {
      if (!error) {
        try {
          CheckEcho(*reply, bytes);
        } catch (...) {
          error = std::current_exception();
        }
      }
      if (!error && p.measuring.load(std::memory_order_relaxed)) {
        p.latencies_us.push_back(Us(Clock::now() - sent));
        ++p.done;
      }
      if (!error && !p.stopping.load(std::memory_order_relaxed)) {
        start_one();
        return;
      }
      std::lock_guard lock(p.mu);
      if (error && !p.error) p.error = error;
      if (--p.outstanding == 0) p.idle.notify_all();
    });
  };
  {
    std::lock_guard lock(p.mu);
    p.outstanding = in_flight;
  }
  for (int i = 0; i < in_flight; ++i) start_one();
  // Warm up (connection, handshake, allocator) before measuring.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double cpu_start = cpu();
  const auto start = Clock::now();
  p.measuring.store(true);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  p.measuring.store(false);
  const auto end = Clock::now();
  const double cpu_end = cpu();
  p.stopping.store(true);
  std::unique_lock lock(p.mu);
  if (!p.idle.wait_for(lock, kIoTimeout, [&] { return p.outstanding == 0; })) {
    throw rlswarm::DeadlineExceeded("rpc echo pipeline: calls did not finish");
  }
  if (p.error) std::rethrow_exception(p.error);
  // All completions ran before `outstanding` reached 0 (under p.mu).
  Sample sample;
  sample.done = p.done;
  sample.seconds = std::chrono::duration<double>(end - start).count();
  sample.cpu_seconds = cpu_end - cpu_start;
  sample.latencies_us = std::move(p.latencies_us);
  return sample;
}

class RpcSide final : public RequestReplySide {
 public:
  RpcSide(const ServerProcess& server, std::size_t bytes, int in_flight, RpcApi api,
          const CurveKeys* keys)
      : server_(server),
        client_(Options(server, keys)),
        payload_(Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(bytes)},
                                     std::vector<std::uint8_t>(bytes, 0x5a))),
        bytes_(bytes),
        in_flight_(in_flight),
        api_(api) {}

  Sample Run(double seconds) override {
    const CpuClock cpu = [&] { return server_.CpuSeconds(); };
    const auto check = [this](const rpc::Reply& reply) { CheckEcho(reply, bytes_); };
    switch (api_) {
      case RpcApi::kInvoke:
        // One call at a time: the caller waits anyway, so it uses Invoke
        // (the calling thread drives the socket while the client is idle).
        return RunClosedLoop(
            in_flight_, seconds, cpu, [] {}, [&] { check(client_.Invoke("echo", {payload_})); });
      case RpcApi::kCallAsync:
        return RunCallbackPipeline(client_, payload_, bytes_, in_flight_, seconds, cpu);
      case RpcApi::kCall:
        break;
    }
    std::deque<std::future<rpc::Reply>> pending;
    return RunClosedLoop(
        in_flight_, seconds, cpu, [&] { pending.push_back(client_.Call("echo", {payload_})); },
        [&] {
          check(pending.front().get());
          pending.pop_front();
        });
  }

 private:
  static rpc::ClientOptions Options(const ServerProcess& server, const CurveKeys* keys) {
    rpc::ClientOptions o;
    o.endpoint = server.rpc(keys != nullptr).value();
    o.default_timeout = kIoTimeout;
    o.name = "bench-client";
    if (keys != nullptr) o.security = keys->ClientSecurity();
    return o;
  }

  const ServerProcess& server_;
  rpc::Client client_;
  const Payload payload_;
  const std::size_t bytes_;
  const int in_flight_;
  const RpcApi api_;
};

}  // namespace

std::unique_ptr<RequestReplySide> RpcRequestReply(const ServerProcess& server, std::size_t bytes,
                                                  int in_flight, RpcApi api,
                                                  const CurveKeys* keys) {
  return std::make_unique<RpcSide>(server, bytes, in_flight, api, keys);
}

Measurement RpcBroadcast(zmq::context_t& ctx, ServerProcess& child, double seconds) {
  rpc::PublisherOptions o;
  o.name = "bench-publisher";
  rpc::Publisher publisher(o);
  std::string ack_endpoint;
  zmq::socket_t acks = BindAcks(ctx, &ack_endpoint);
  child.Command("subs rpc " + publisher.endpoint() + " " + publisher.snapshot_endpoint() + " " +
                ack_endpoint);
  const auto blob = Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(kBroadcastBytes)},
                                        std::vector<std::uint8_t>(kBroadcastBytes, 0x5a));
  const auto small = Payload::FromString("");
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

}  // namespace rlswarm::bench
