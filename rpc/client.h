#pragma once

// Client: calls methods of one Server over a ZeroMQ DEALER socket.
//
// Many calls may be in flight on one client; each gets a request id and
// completes through a std::future (or a callback). An I/O thread owns the
// socket; Call only enqueues and wakes it, so Call never blocks on the
// network. Thread-safe: any thread may call.
//
// Every call has a deadline; when it passes the call fails with
// DeadlineExceeded (a late reply is then discarded). Errors from the server
// come back as the same exception type the handler threw (InvalidArgument,
// NotFound, ResourceExhausted, Internal, ...), with the server's message.
//
// Failure handling (the zguide's Lazy Pirate, per call):
//   * The server's connection drops (process killed) or heartbeats stop
//     (process hung, e.g. SIGSTOP; detected within about heartbeat_interval
//     + heartbeat_timeout): the client closes its socket and reconnects with
//     backoff. Calls marked idempotent are resent on the new connection
//     until their deadline or max_attempts; other calls in flight fail with
//     Unavailable, because the server may or may not have executed them.
//     Calls that never left the process (no connection was up) are sent
//     again whatever their kind. A hung server accepts TCP but never
//     completes a new handshake, so an idempotent call to it ends with
//     DeadlineExceeded at its deadline.
//   * No server listening at all: calls wait (queued) until their deadline.
//   * Close(): every pending call fails with Cancelled; threads join.

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common/payload.h"
#include "rpc/security.h"
#include "rpc/wire.h"

namespace rlswarm::rpc {

struct ClientOptions {
  std::string endpoint;  // the server's bound endpoint
  std::chrono::milliseconds default_timeout{10000};
  std::chrono::milliseconds heartbeat_interval{100};  // ZMTP PING; 0 = off
  std::chrono::milliseconds heartbeat_timeout{1000};  // silent this long = dead
  std::chrono::milliseconds reconnect_backoff{50};    // doubles up to max
  std::chrono::milliseconds reconnect_backoff_max{2000};
  int max_attempts = 5;  // idempotent calls: sends in total
  std::int64_t max_message_bytes = 1LL << 32;
  int send_high_water_mark = 1000;
  WireLimits limits;
  SecurityOptions security;
  std::string name = "rpc-client";

  void Validate() const;
};

struct CallOptions {
  // 0 = ClientOptions::default_timeout.
  std::chrono::milliseconds timeout{0};
  // Safe to execute twice: resent after a reconnect.
  bool idempotent = false;
};

struct Reply {
  std::vector<Payload> payloads;
};

struct ClientStats {
  std::uint64_t calls = 0;
  std::uint64_t retries = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t deadline_exceeded = 0;
  std::uint64_t late_replies = 0;  // replies to calls that already finished
  std::uint64_t direct_calls = 0;  // Invokes sent by the calling thread itself
  // CallAsyncs made from a completion on the I/O thread (sent with no wake-up)
  std::uint64_t pipelined_calls = 0;
};

class Client {
 public:
  // Connects lazily (ZeroMQ connects in the background); throws
  // InvalidArgument for bad options.
  explicit Client(ClientOptions options);
  ~Client();  // Close()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `payloads` to `method`. The future holds the reply or one of the
  // typed exceptions above. Never blocks.
  std::future<Reply> Call(const std::string& method, std::vector<Payload> payloads,
                          CallOptions options = {});

  // As Call(...).get(), for a caller that waits anyway. When no other call
  // of this client is in flight, the calling thread sends the request and
  // waits for the reply on the socket itself while the I/O thread sleeps,
  // which saves the two thread hand-overs of a Call (tens of microseconds on
  // a VM). Otherwise, or when anything else needs the I/O thread (another
  // call is posted, the connection changes), it falls back to Call's path.
  // Same errors, deadline, retry and heartbeat behaviour as Call.
  Reply Invoke(const std::string& method, std::vector<Payload> payloads, CallOptions options = {});

  // As Call, but runs `done` with the reply or an exception_ptr (exactly one
  // is set) on the client's I/O thread, or on a thread inside Invoke on this
  // client. `done` must not block. A CallAsync made from `done` on the I/O
  // thread is sent in the same round, with no thread hand-over: a caller
  // that starts its next call from the completion of the last (a pipeline)
  // keeps its calls in flight at the cost of the socket work alone.
  void CallAsync(const std::string& method, std::vector<Payload> payloads, CallOptions options,
                 std::function<void(Reply*, std::exception_ptr)> done);

  // Fails every pending call with Cancelled and joins the I/O thread.
  // Idempotent; never hangs.
  void Close();

  ClientStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::rpc
