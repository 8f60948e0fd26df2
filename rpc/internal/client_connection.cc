#include "rpc/internal/client_connection.h"

#include <algorithm>
#include <cstring>

#include "rpc/internal/context.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/zmq_security.h"

namespace rlswarm::rpc::internal {
namespace {

constexpr int kWatchedEvents =
    ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

}  // namespace

ClientConnection::ClientConnection(const ClientOptions& options)
    : dealer_(ProcessContext(), zmq::socket_type::dealer),
      dealer_waiter_(dealer_),
      monitor_(ProcessContext(), zmq::socket_type::pair) {
  dealer_.set(zmq::sockopt::linger, 0);  // the client tracks every call itself
  monitor_.set(zmq::sockopt::linger, 0);
  dealer_.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
  dealer_.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
  SetHeartbeats(dealer_, options.heartbeat_interval, options.heartbeat_timeout);
  if (options.heartbeat_interval.count() > 0) {
    // Heartbeats start after the handshake; a peer that accepts TCP but
    // never answers the greeting (SIGSTOPped) is caught by this instead.
    const auto handshake = std::max<std::int64_t>(2 * options.heartbeat_timeout.count(), 1000);
    dealer_.set(zmq::sockopt::handshake_ivl, static_cast<int>(handshake));
  }
  dealer_.set(zmq::sockopt::reconnect_ivl, static_cast<int>(options.reconnect_backoff.count()));
  dealer_.set(zmq::sockopt::reconnect_ivl_max,
              static_cast<int>(options.reconnect_backoff_max.count()));
  ConfigureCurveClient(dealer_, options.security);

  // The monitor is attached before connect, so no event is missed.
  const std::string monitor_endpoint = UniqueInprocEndpoint("rpc-client-monitor");
  if (zmq_socket_monitor(dealer_.handle(), monitor_endpoint.c_str(), kWatchedEvents) != 0) {
    throw zmq::error_t();
  }
  monitor_.connect(monitor_endpoint);
  monitor_fd_ = monitor_.get(zmq::sockopt::fd);
  try {
    dealer_.connect(options.endpoint);
  } catch (...) {
    zmq_socket_monitor(dealer_.handle(), nullptr, 0);
    throw;
  }
}

ClientConnection::~ClientConnection() {
  zmq_socket_monitor(dealer_.handle(), nullptr, 0);
  monitor_.close();
  dealer_.close();
}

std::optional<ConnectionEvent> ClientConnection::NextEvent() {
  // Each event is two frames: [uint16 event, uint32 value][endpoint].
  zmq::message_t frame;
  if (!monitor_.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  ConnectionEvent event;
  if (frame.size() >= 6) {
    std::uint16_t id = 0;
    std::memcpy(&id, frame.data(), sizeof(id));
    std::memcpy(&event.value, static_cast<const char*>(frame.data()) + 2, sizeof(event.value));
    event.event = id;
  }
  while (frame.more()) {
    frame = zmq::message_t();
    (void)monitor_.recv(frame, zmq::recv_flags::none);
  }
  return event;
}

}  // namespace rlswarm::rpc::internal
