#pragma once

// Server: request/reply over a ZeroMQ ROUTER socket.
//
// Data path: an I/O thread owns the ROUTER socket. It decodes and validates
// each request (header, payload frames; see wire.h), then hands it to a
// bounded queue served by `num_workers` worker threads that run the
// registered handler. A handler answers through its Responder, at once or
// later from any thread (deferred reply: e.g. replay holds a sample request
// until its rate limiter allows it, without blocking any worker). Replies go
// back to the I/O thread through a mutex-protected queue; the I/O thread is
// the only one that touches the ROUTER. It sleeps inside ZeroMQ's blocking
// receive (one poll(2) per request, as a raw ZeroMQ server), and a reply
// posted from another thread wakes it with an empty message from an inproc
// socket connected to the ROUTER under a reserved routing id
// ("rlswarm-server-wake"; a remote peer cannot take it).
//
// A handler registered with HandlerOptions::run_on_io_thread skips the
// worker queue: it runs on the I/O thread as soon as its request is decoded,
// and a reply it makes there is sent before the next request is read,
// without any thread hand-over (two thread wake-ups fewer per call). For cheap,
// non-blocking handlers only (replay's insert and sample: they reply at once
// or keep the Responder for a deferred reply); while one runs, no other
// request is read and no reply is sent.
//
// Failure behaviour (each case tested in server_test.cc):
//   * malformed message (frame count, header, payload sizes): an
//     InvalidArgument error reply when the request id can be read, else the
//     message is dropped; logged and counted either way. Nothing a peer sends
//     crashes the server or makes it allocate what the peer merely claims.
//   * message larger than max_message_bytes: ZMQ_MAXMSGSIZE makes libzmq
//     drop the connection of that peer; others are unaffected.
//   * unknown method: NotFound error reply.
//   * worker queue full (max_queued_requests): ResourceExhausted error reply
//     at once (backpressure the client can see and retry).
//   * request whose deadline passed while it waited in the queue: dropped
//     with a DeadlineExceeded reply, the handler never runs.
//   * handler throws an rlswarm::Error: that status and message are replied;
//     any other exception: Internal.
//   * Responder destroyed without replying: Internal reply ("handler did not
//     reply"), so the client never waits for nothing.
//   * reply to a peer that disconnected (ROUTER_MANDATORY, EHOSTUNREACH):
//     dropped, logged, counted in stats().replies_dropped.
//   * send high-water mark to a slow peer reached (EAGAIN): the reply is
//     dropped and counted; the I/O thread never blocks on one peer.
//
// Thread-safety: Register before Start; everything else is thread-safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/payload.h"
#include "rpc/security.h"
#include "rpc/wire.h"

namespace rlswarm::rpc {

struct ServerOptions {
  // Where to bind; "tcp://127.0.0.1:*" picks a free port (read it back with
  // Server::endpoint()). inproc:// works between any server and client of
  // one process (they share one context).
  std::string endpoint = "tcp://127.0.0.1:*";
  int num_workers = 2;
  std::size_t max_queued_requests = 4096;
  std::int64_t max_message_bytes = 1LL << 32;  // ZMQ_MAXMSGSIZE
  int send_high_water_mark = 1000;             // messages queued per peer
  int receive_high_water_mark = 1000;
  std::chrono::milliseconds heartbeat_interval{100};  // ZMTP PING; 0 = off
  std::chrono::milliseconds heartbeat_timeout{1000};
  WireLimits limits;
  SecurityOptions security;
  std::string name = "rpc-server";  // for logs

  void Validate() const;
};

struct Request {
  std::string method;
  std::vector<Payload> payloads;
  // When the caller stops waiting (steady clock; time_point::max() = never).
  std::chrono::steady_clock::time_point deadline;
  bool idempotent = false;
};

// Answers one request, exactly once. Copyable (shared), callable from any
// thread, at any time while the server runs; calls after the first are
// ignored (and logged). Reply/Fail never block.
class Responder {
 public:
  void Reply(std::vector<Payload> payloads) const;
  void Fail(StatusCode code, const std::string& message) const;
  std::chrono::steady_clock::time_point deadline() const;
  bool replied() const;

  struct State;  // internal
  explicit Responder(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

using Handler = std::function<void(Request request, Responder responder)>;

struct HandlerOptions {
  // Run on the server's I/O thread instead of a worker. The handler must not
  // block (no locks held for long, no I/O, no waiting): it stalls every
  // client of the server while it runs. Such requests are never queued, so
  // max_queued_requests does not apply to them; expired deadlines,
  // exceptions and unanswered Responders are handled as for workers.
  bool run_on_io_thread = false;
};

struct ServerStats {
  std::uint64_t requests = 0;
  std::uint64_t replies = 0;
  std::uint64_t malformed = 0;
  std::uint64_t unknown_method = 0;
  std::uint64_t rejected_queue_full = 0;
  std::uint64_t expired_in_queue = 0;
  std::uint64_t replies_dropped = 0;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers a handler; throws FailedPrecondition after Start and
  // InvalidArgument for a duplicate or empty name.
  void Register(const std::string& method, Handler handler, HandlerOptions options = {});

  // Binds and starts the threads. Throws Unavailable if the endpoint cannot
  // be bound, NotFound/InvalidArgument for bad security files.
  void Start();

  // The bound endpoint with the real port ("tcp://127.0.0.1:40123").
  std::string endpoint() const;

  // Stops accepting, fails queued requests with Unavailable, joins every
  // thread. Replies sent after Stop are dropped. Idempotent; never hangs
  // (linger is bounded).
  void Stop();

  ServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::rpc
