#pragma once

// Internal: the shared state behind a Responder, and the channel its reply
// takes back to the server's I/O thread.
//
// A reply is encoded on the thread that answers (a worker, or whichever
// thread holds a deferred Responder), queued in the server's ReplyChannel
// mailbox, and sent by the I/O thread, the only thread that touches the
// ROUTER. The channel is shared with every Responder, so a Responder may
// outlive the Server: once the server stops, the mailbox is closed and late
// replies are dropped.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rpc/internal/mailbox.h"
#include "rpc/server.h"

namespace rlswarm::rpc::internal {

// One reply on its way to the I/O thread, which sends it to the ROUTER as
// [identity][header][payload]... and encodes the header only then (into
// buffers it keeps, so a reply allocates no header).
struct OutgoingReply {
  std::string identity;
  std::uint64_t request_id = 0;
  StatusCode status = StatusCode::kOk;
  std::string error_message;  // already cut to max_error_bytes
  std::vector<Payload> payloads;
};

// An encoded reply; `message` is cut to max_error_bytes so the client's
// header limits never reject it.
OutgoingReply MakeReply(std::string identity, std::uint64_t request_id, StatusCode status,
                        std::string message, std::vector<Payload> payloads,
                        std::size_t max_error_bytes);

struct ReplyChannel {
  // `wake` wakes the I/O thread when a reply is posted from another thread
  // (see Mailbox).
  ReplyChannel(std::string name, std::size_t error_bytes, std::function<void()> wake)
      : server_name(std::move(name)), max_error_bytes(error_bytes), mailbox(std::move(wake)) {}

  // The server's I/O thread calls this once before serving: replies made on
  // that thread (inline handlers) are then queued without a wake-up.
  void ServeOnThisThread();
  // Queues `reply` for the I/O thread; false once the server stopped.
  bool Post(OutgoingReply&& reply);

  const std::string server_name;  // for logs
  const std::size_t max_error_bytes;
  Mailbox<OutgoingReply> mailbox;
};

}  // namespace rlswarm::rpc::internal

namespace rlswarm::rpc {

struct Responder::State {
  State(std::shared_ptr<internal::ReplyChannel> reply_channel, std::string caller, std::uint64_t id,
        std::string method_name, std::chrono::steady_clock::time_point request_deadline)
      : channel(std::move(reply_channel)),
        identity(std::move(caller)),
        request_id(id),
        method(std::move(method_name)),
        deadline(request_deadline) {}
  // Replies Internal ("handler did not reply") unless a reply was sent.
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Sends the reply unless one was sent already (then logs and ignores it).
  void Send(StatusCode status, std::string message, std::vector<Payload> payloads);

  const std::shared_ptr<internal::ReplyChannel> channel;
  const std::string identity;  // the ROUTER routing id of the caller
  const std::uint64_t request_id;
  const std::string method;
  const std::chrono::steady_clock::time_point deadline;
  std::atomic<bool> replied{false};
};

}  // namespace rlswarm::rpc
