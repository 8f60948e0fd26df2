// rpc_bench: the raw ZeroMQ baselines (no rlswarm::rpc code in the path).

#include <cstring>
#include <zmq_addon.hpp>

#include "bench/rpc_bench.h"

namespace rlswarm::bench {

// Echoes every message back to its sender, moving the received frames.
void RawEchoLoop(zmq::socket_t& router, const std::atomic<bool>& stop) {
  std::vector<zmq::message_t> frames;
  while (!stop.load(std::memory_order_relaxed)) {
    frames.clear();
    if (!zmq::recv_multipart(router, std::back_inserter(frames))) continue;  // poll timeout
    zmq::send_multipart(router, frames);
  }
}

namespace {

class RawSide final : public RequestReplySide {
 public:
  RawSide(zmq::context_t& ctx, const ServerProcess& server, std::size_t bytes, int in_flight,
          const CurveKeys* keys, bool heartbeats)
      : server_(server),
        dealer_(ctx, zmq::socket_type::dealer),
        payload_(bytes, std::byte{0x5a}),
        in_flight_(in_flight) {
    ConfigureRawSocket(dealer_);
    if (heartbeats) EnableRpcHeartbeats(dealer_);
    dealer_.set(zmq::sockopt::rcvtimeo, static_cast<int>(kIoTimeout.count()));
    if (keys != nullptr) {
      dealer_.set(zmq::sockopt::curve_serverkey, keys->server.public_key);
      dealer_.set(zmq::sockopt::curve_publickey, keys->client.public_key);
      dealer_.set(zmq::sockopt::curve_secretkey, keys->client.secret_key);
    }
    dealer_.connect(server.raw(keys != nullptr));
  }

  Sample Run(double seconds) override {
    return RunClosedLoop(
        in_flight_, seconds, [&] { return server_.CpuSeconds(); },
        [&] {
          auto frame = ZeroCopy(payload_);
          dealer_.send(frame, zmq::send_flags::none);
        },
        [&] {
          if (!dealer_.recv(reply_) || reply_.size() != payload_.size() || reply_.more()) {
            throw rlswarm::Unavailable("raw echo: no reply or a wrong one");
          }
        });
  }

 private:
  const ServerProcess& server_;
  zmq::socket_t dealer_;
  const std::vector<std::byte> payload_;
  const int in_flight_;
  zmq::message_t reply_;
};

}  // namespace

std::unique_ptr<RequestReplySide> RawRequestReply(zmq::context_t& ctx, const ServerProcess& server,
                                                  std::size_t bytes, int in_flight,
                                                  const CurveKeys* keys, bool heartbeats) {
  return std::make_unique<RawSide>(ctx, server, bytes, in_flight, keys, heartbeats);
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

}  // namespace rlswarm::bench
