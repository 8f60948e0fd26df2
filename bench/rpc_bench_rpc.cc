// rpc_bench: the same cases through rlswarm::rpc.

#include "bench/rpc_bench.h"
#include "common/dtype.h"
#include "rpc/broadcast.h"
#include "rpc/client.h"
#include "rpc/payload.h"

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
  const auto check = [bytes](const rpc::Reply& reply) {
    if (reply.payloads.size() != 1 || reply.payloads[0].bytes().size() != bytes) {
      throw rlswarm::Internal("rpc echo: wrong reply");
    }
  };
  if (in_flight == 1) {
    // One call at a time: the caller waits anyway, so it uses Invoke (the
    // calling thread drives the socket while the client is idle).
    return RunClosedLoop(
        1, seconds, [&] { return server.CpuSeconds(); }, [] {},
        [&] { check(client.Invoke("echo", {payload})); });
  }
  std::deque<std::future<rpc::Reply>> pending;
  return RunClosedLoop(
      in_flight, seconds, [&] { return server.CpuSeconds(); },
      [&] { pending.push_back(client.Call("echo", {payload})); },
      [&] {
        check(pending.front().get());
        pending.pop_front();
      });
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

}  // namespace rlswarm::bench
