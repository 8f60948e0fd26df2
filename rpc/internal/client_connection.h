#pragma once

// Internal: one connection attempt of a Client: a DEALER socket connected to
// the server, plus a socket monitor (zmq_socket_monitor on a unique inproc
// address) that reports when the connection is up (handshake succeeded) and
// when it is lost (peer closed, heartbeats timed out, handshake failed).
// Lazy Pirate replaces the whole object after a loss, so nothing queued on
// a dead connection is ever sent later behind the client's back.
//
// Thread-safety: none; owned by the client's I/O thread (the first one is
// built by the Client constructor before that thread starts).

#include <cstdint>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "rpc/client.h"
#include "rpc/internal/socket_waiter.h"

namespace rlswarm::rpc::internal {

struct ConnectionEvent {
  int event = 0;            // ZMQ_EVENT_*
  std::uint32_t value = 0;  // errno, status code, ... (see zmq_socket_monitor)
};

class ClientConnection {
 public:
  // Creates, configures and connects the DEALER. Throws zmq::error_t for a
  // malformed endpoint, NotFound/InvalidArgument for bad CURVE key files.
  explicit ClientConnection(const ClientOptions& options);
  ~ClientConnection();  // stops the monitor, then closes both sockets
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  zmq::socket_t& dealer() { return dealer_; }
  // How to sleep until the DEALER has a message; every use of dealer() is
  // reported to it (see SocketWaiter).
  SocketWaiter& dealer_waiter() { return dealer_waiter_; }
  zmq::socket_t& monitor() { return monitor_; }
  // The monitor's ZMQ_FD, for zmq_poll as a plain descriptor. It is
  // edge-like (readable when commands reach the socket), so whoever sees it
  // readable must call NextEvent until it returns nullopt; after that the
  // next event makes it readable again. Watching it this way spares every
  // poll round libzmq's ZMQ_EVENTS check on the monitor (two syscalls).
  int monitor_fd() const { return monitor_fd_; }

  // The next monitor event, without blocking; nullopt if none is waiting.
  std::optional<ConnectionEvent> NextEvent();

  // Whether the ZMTP handshake completed on this connection: before that,
  // nothing queued on the DEALER has left the process.
  bool handshake_succeeded() const { return handshake_succeeded_; }
  void set_handshake_succeeded() { handshake_succeeded_ = true; }

 private:
  zmq::socket_t dealer_;
  SocketWaiter dealer_waiter_;
  zmq::socket_t monitor_;  // PAIR receiving dealer_'s monitor events
  int monitor_fd_ = -1;
  bool handshake_succeeded_ = false;
};

}  // namespace rlswarm::rpc::internal
