#pragma once

// Client::Impl, the rpc client's machinery (client.h says what it
// promises), shared by the two files that implement it: rpc/client.cc (the
// calls' entry points and completions) and rpc/client_io_loop.cc (the I/O
// thread: sending, receiving, deadlines, reconnecting). Not a public
// header: it holds ZeroMQ types.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/thread_annotations.h"
#include "rpc/client.h"
#include "rpc/internal/client_connection.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/mailbox.h"
#include "rpc/internal/pending_calls.h"
#include "rpc/internal/status_exceptions.h"

namespace rlswarm::rpc {
namespace internal {

// The client whose I/O thread this is (nullptr on other threads): a call
// made from a completion callback joins the pending calls at once.
inline thread_local const void* client_io_thread_of = nullptr;

}  // namespace internal

class Client::Impl {
 public:
  explicit Impl(ClientOptions options);
  ~Impl() { Close(); }

  void CallAsync(const std::string& method, std::vector<Payload> payloads, CallOptions options,
                 internal::CallDone done);
  // Leads its own call when the client is idle (see Client::Invoke); false
  // if it could not start (then nothing was sent and `call` is untouched).
  bool TryInvokeDirect(std::unique_ptr<internal::CallRecord>& call,
                       const std::atomic<bool>& finished);
  // Hands `call` to the I/O thread (fails it Cancelled once closed).
  void Post(std::unique_ptr<internal::CallRecord> call);
  std::unique_ptr<internal::CallRecord> MakeCall(const std::string& method,
                                                 std::vector<Payload> payloads, CallOptions options,
                                                 internal::CallDone done);
  void Close();
  ClientStats stats() const;

 private:
  void IoLoop();
  std::chrono::milliseconds PollTimeout(std::chrono::steady_clock::time_point now) const
      RLSWARM_REQUIRES(io_mu_);
  void OpenConnection() RLSWARM_REQUIRES(io_mu_);
  void LoseConnection(const std::string& why, bool rejected) RLSWARM_REQUIRES(io_mu_);
  // Receives replies until the DEALER is empty (or a round's worth); with
  // `until`, stops as soon as *until is true.
  void ReceiveReplies(const std::atomic<bool>* until = nullptr) RLSWARM_REQUIRES(io_mu_);
  void HandleReply(internal::ReceivedMessage& message) RLSWARM_REQUIRES(io_mu_);
  void HandleConnectionEvents() RLSWARM_REQUIRES(io_mu_);
  void SendUnsent() RLSWARM_REQUIRES(io_mu_);
  void ExpireDeadlines() RLSWARM_REQUIRES(io_mu_);
  void Shutdown() RLSWARM_REQUIRES(io_mu_);
  void Finish(std::unique_ptr<internal::CallRecord> call, Reply* reply, std::exception_ptr error);
  void Fail(std::unique_ptr<internal::CallRecord> call, StatusCode code,
            const std::string& message) {
    Finish(std::move(call), nullptr, internal::MakeStatusException(code, message));
  }

  const ClientOptions options_;
  internal::Mailbox<std::unique_ptr<internal::CallRecord>> mailbox_;  // new calls
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<bool> stop_{false};
  Mutex close_mutex_;  // serialises Close
  std::thread io_thread_ RLSWARM_GUARDED_BY(close_mutex_);

  // Guards everything below and every use of the sockets. The I/O thread
  // holds it except while it sleeps with no call pending (it then polls
  // only the wake and monitor descriptors, touching no socket), which is
  // when an Invoke may take the socket over for its own call.
  Mutex io_mu_;
  std::unique_ptr<internal::ClientConnection> connection_ RLSWARM_GUARDED_BY(io_mu_);
  // Whether connection_'s monitor was read until empty since it was made.
  bool monitor_drained_ RLSWARM_GUARDED_BY(io_mu_) = false;
  // A call expired after it was sent on connection_, so its reply may still
  // come: the idle I/O thread then watches the DEALER too (to count and
  // drop it); otherwise it does not, so that an Invoke's reply wakes only
  // the Invoke.
  bool late_reply_possible_ RLSWARM_GUARDED_BY(io_mu_) = false;
  internal::PendingCalls pending_ RLSWARM_GUARDED_BY(io_mu_);
  // Buffers of the thread that drives the socket, kept between calls so
  // that a call allocates nothing for its header, frame list or sizes.
  Header send_header_ RLSWARM_GUARDED_BY(io_mu_);
  std::string send_encoded_ RLSWARM_GUARDED_BY(io_mu_);
  std::vector<zmq::message_t> send_frames_ RLSWARM_GUARDED_BY(io_mu_);
  internal::ReceivedMessage received_ RLSWARM_GUARDED_BY(io_mu_);
  Header reply_header_ RLSWARM_GUARDED_BY(io_mu_);
  std::vector<std::size_t> frame_sizes_ RLSWARM_GUARDED_BY(io_mu_);
  std::chrono::steady_clock::time_point reconnect_at_ RLSWARM_GUARDED_BY(io_mu_);
  std::chrono::milliseconds backoff_ RLSWARM_GUARDED_BY(io_mu_);

  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<std::uint64_t> reconnects_{0};
  std::atomic<std::uint64_t> deadline_exceeded_{0};
  std::atomic<std::uint64_t> late_replies_{0};
  std::atomic<std::uint64_t> direct_calls_{0};
  std::atomic<std::uint64_t> pipelined_calls_{0};
};

}  // namespace rlswarm::rpc
