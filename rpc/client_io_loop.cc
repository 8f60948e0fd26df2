// Client::Impl's I/O thread (rpc/internal/client_impl.h): one poll loop
// that sends the calls posted to it, receives and matches replies, expires
// deadlines, and reconnects with backoff when the connection is lost.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <zmq.hpp>

#include "common/errors.h"
#include "rpc/internal/client_impl.h"
#include "rpc/internal/header_peek.h"
#include "rpc/internal/socket_waiter.h"

namespace rlswarm::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using internal::CallRecord;

// The poll timeout never exceeds this, whatever the deadlines say.
constexpr std::chrono::milliseconds kMaxPollWait{1000};
// Replies read per poll round before new calls are sent.
constexpr int kRepliesPerRound = 1024;

}  // namespace

void Client::Impl::IoLoop() {
  internal::client_io_thread_of = this;
  std::vector<std::unique_ptr<CallRecord>> new_calls;  // reused: no allocation per round
  MutexLock lock(io_mu_);
  while (!stop_.load()) {
    try {
      // A new connection's monitor is read until empty before its
      // descriptor is trusted to signal (see ClientConnection::monitor_fd).
      if (connection_ && !monitor_drained_) HandleConnectionEvents();
      // Idle (nothing pending, connection settled): sleep on plain
      // descriptors only and without the lock, so an Invoke may use the
      // socket meanwhile. The DEALER's ZMQ_FD is watched only while a late
      // reply may come, and trusted only once the socket is known to be
      // empty (see SocketWaiter); an Invoke leaves it so whenever a late
      // reply is possible (it then reads until EAGAIN).
      const bool idle = connection_ && monitor_drained_ && pending_.empty();
      if (idle && connection_->dealer_waiter().MayHaveInput()) {
        ReceiveReplies();  // late replies: counted and dropped
        continue;
      }
      bool wake = false;
      bool dealer_ready = false;
      bool monitor_ready = false;
      if (idle) {
        std::array<pollfd, 3> fds = {{{mailbox_.wake_fd(), POLLIN, 0},
                                      {connection_->monitor_fd(), POLLIN, 0},
                                      {connection_->dealer().get(zmq::sockopt::fd), POLLIN, 0}}};
        const std::size_t count = late_reply_possible_ ? 3 : 2;
        const std::chrono::milliseconds timeout = PollTimeout(Clock::now());
        lock.Unlock();
        internal::PollDescriptors(std::span(fds.data(), count), timeout);
        lock.Lock();
        wake = fds[0].revents != 0;
        monitor_ready = fds[1].revents != 0;
        dealer_ready = count == 3 && fds[2].revents != 0;
      } else if (connection_) {
        const short dealer_events =
            pending_.NextUnsent() != nullptr ? (ZMQ_POLLIN | ZMQ_POLLOUT) : ZMQ_POLLIN;
        std::array<pollfd, 2> fds = {
            {{mailbox_.wake_fd(), POLLIN, 0}, {connection_->monitor_fd(), POLLIN, 0}}};
        dealer_ready =
            connection_->dealer_waiter().Wait(dealer_events, fds, PollTimeout(Clock::now()));
        wake = fds[0].revents != 0;
        monitor_ready = fds[1].revents != 0;
      } else {
        std::array<pollfd, 1> fds = {{{mailbox_.wake_fd(), POLLIN, 0}}};
        internal::PollDescriptors(fds, PollTimeout(Clock::now()));
        wake = fds[0].revents != 0;
      }
      if (wake) mailbox_.ConsumeWake();
      mailbox_.Take(new_calls);
      for (std::unique_ptr<CallRecord>& call : new_calls) pending_.Add(std::move(call));
      // Only ready sockets are read: a receive that finds nothing costs
      // libzmq a command check (syscalls) for nothing.
      // Calls that completions started go out after this round's replies,
      // together: sending each at once would wake ZeroMQ's I/O thread once
      // per call (measured: 64 B pipelines then cost 3-4 us more CPU per
      // call when the processes are not pinned).
      if (connection_ && dealer_ready) ReceiveReplies();
      if (connection_ && monitor_ready) HandleConnectionEvents();
      if (!connection_ && Clock::now() >= reconnect_at_) OpenConnection();
      if (connection_) SendUnsent();
      ExpireDeadlines();
    } catch (const std::exception& e) {
      spdlog::error("{}: I/O loop: {}", options_.name, e.what());
    }
  }
  Shutdown();
}

std::chrono::milliseconds Client::Impl::PollTimeout(Clock::time_point now) const {
  Clock::time_point wake = now + kMaxPollWait;
  if (auto deadline = pending_.NextDeadline()) wake = std::min(wake, *deadline);
  if (!connection_) wake = std::min(wake, reconnect_at_);
  if (wake <= now) return std::chrono::milliseconds(0);
  // Rounded up: waking a little early would only spin.
  return std::chrono::ceil<std::chrono::milliseconds>(wake - now);
}

void Client::Impl::OpenConnection() {
  try {
    connection_ = std::make_unique<internal::ClientConnection>(options_);
    monitor_drained_ = false;
    late_reply_possible_ = false;
    reconnects_.fetch_add(1, std::memory_order_relaxed);
  } catch (const std::exception& e) {
    spdlog::error("{}: cannot reconnect to {}: {}", options_.name, options_.endpoint, e.what());
    reconnect_at_ = Clock::now() + backoff_;
  }
}

// Lazy Pirate: the connection is gone, and with it any request or reply it
// carried. Calls that never left the process are sent again; idempotent
// calls are resent; the others fail, because the server may have run them.
void Client::Impl::LoseConnection(const std::string& why, bool rejected) {
  ReceiveReplies();  // whatever arrived before the loss still counts
  const bool delivered = connection_->handshake_succeeded();
  connection_.reset();
  const Clock::time_point now = Clock::now();
  std::vector<CallRecord*> resend;
  std::vector<std::uint64_t> failed;
  int not_retried = 0;
  for (CallRecord* call : pending_.InFlight()) {
    if (rejected) {
      failed.push_back(call->id);
    } else if (!delivered) {
      --call->attempts;  // queued on a connection that never came up
      resend.push_back(call);
    } else if (call->idempotent && call->attempts < options_.max_attempts && call->deadline > now) {
      resend.push_back(call);
    } else {
      failed.push_back(call->id);
      if (!call->idempotent) ++not_retried;
    }
  }
  pending_.Requeue(resend);
  for (std::uint64_t id : failed) {
    std::unique_ptr<CallRecord> call = pending_.Remove(id);
    std::string message = options_.name + ": " + why;
    if (rejected) {
      // Retrying cannot help until the keys are fixed.
    } else if (!call->idempotent) {
      message += "; the call was in flight and is not idempotent, so it is not retried";
    } else {
      message += "; gave up after " + std::to_string(call->attempts) + " attempts";
    }
    Fail(std::move(call), StatusCode::kUnavailable, message);
  }
  if (rejected) {
    for (std::unique_ptr<CallRecord>& call : pending_.TakeAll()) {
      Fail(std::move(call), StatusCode::kUnavailable, options_.name + ": " + why);
    }
  }
  reconnect_at_ = now + backoff_;
  spdlog::warn(
      "{}: {}; reconnecting in {} ms ({} calls to resend, {} failed, {} of them "
      "not idempotent)",
      options_.name, why, backoff_.count(), resend.size(), failed.size(), not_retried);
  backoff_ = std::min(backoff_ * 2, options_.reconnect_backoff_max);
}

void Client::Impl::ReceiveReplies(const std::atomic<bool>* until) {
  const std::size_t max_frames = options_.limits.max_payloads + 1;
  internal::SocketWaiter& waiter = connection_->dealer_waiter();
  for (int i = 0; i < kRepliesPerRound; ++i) {
    if (!internal::ReceiveMessage(connection_->dealer(), max_frames, received_)) {
      waiter.MarkEmpty();
      return;
    }
    waiter.MarkUsed();
    HandleReply(received_);
    if (until != nullptr && until->load(std::memory_order_acquire)) return;
  }
}

void Client::Impl::HandleReply(internal::ReceivedMessage& message) {
  std::vector<zmq::message_t>& frames = message.frames;
  const std::span<const std::byte> header_bytes = internal::FrameBytes(frames[0]);
  Header& header = reply_header_;
  try {
    DecodeHeader(header_bytes, options_.limits, header);
    if (header.kind != MessageKind::kReply) throw InvalidArgument("not a reply");
  } catch (const InvalidArgument& e) {
    const auto id = internal::PeekRequestId(header_bytes, options_.limits);
    spdlog::warn("{}: malformed reply from {}: {}", options_.name, options_.endpoint, e.what());
    if (id) {
      if (auto call = pending_.Remove(*id)) {
        Fail(std::move(call), StatusCode::kInternal,
             options_.name + ": malformed reply from " + options_.endpoint + ": " + e.what());
      }
    }
    return;
  }
  std::unique_ptr<CallRecord> call = pending_.Remove(header.request_id);
  if (!call) {
    late_replies_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (header.status != StatusCode::kOk) {
    Fail(std::move(call), header.status, header.error_message);
    return;
  }
  frame_sizes_.clear();
  for (std::size_t i = 1; i < frames.size(); ++i) frame_sizes_.push_back(frames[i].size());
  try {
    if (message.too_many_frames) throw InvalidArgument("too many payload frames");
    CheckPayloadFrames(header, frame_sizes_, options_.limits);
  } catch (const InvalidArgument& e) {
    Fail(std::move(call), StatusCode::kInternal,
         options_.name + ": malformed reply to '" + call->method + "': " + e.what());
    return;
  }
  Reply reply;
  reply.payloads.reserve(header.payloads.size());
  for (std::size_t i = 0; i < header.payloads.size(); ++i) {
    reply.payloads.push_back(internal::AdoptFrame(std::move(frames[i + 1]), header.payloads[i]));
  }
  Finish(std::move(call), &reply, nullptr);
}

void Client::Impl::HandleConnectionEvents() {
  while (connection_) {
    const std::optional<internal::ConnectionEvent> event = connection_->NextEvent();
    if (!event) {
      monitor_drained_ = true;
      return;
    }
    switch (event->event) {
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        connection_->set_handshake_succeeded();
        backoff_ = options_.reconnect_backoff;
        break;
      case ZMQ_EVENT_DISCONNECTED:
        LoseConnection("connection to " + options_.endpoint +
                           " lost (server gone, or silent for heartbeat_timeout)",
                       false);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        LoseConnection("handshake with " + options_.endpoint + " failed", false);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        LoseConnection(options_.endpoint + " rejected this client's CURVE key (ZAP status " +
                           std::to_string(event->value) + ")",
                       true);
        break;
      default:
        break;
    }
  }
}

void Client::Impl::SendUnsent() {
  CallRecord* call = pending_.NextUnsent();
  if (call == nullptr) return;
  const Clock::time_point now = Clock::now();
  for (; call != nullptr; call = pending_.NextUnsent()) {
    if (call->deadline <= now) return;  // ExpireDeadlines fails it
    Header& header = send_header_;
    header.kind = MessageKind::kRequest;
    header.method = call->method;
    header.request_id = call->id;
    header.timeout_ms = std::max<std::int64_t>(
        1, std::chrono::ceil<std::chrono::milliseconds>(call->deadline - now).count());
    header.idempotent = call->idempotent;
    internal::DescribeInto(call->payloads, header.payloads);
    EncodeHeader(header, send_encoded_);
    std::vector<zmq::message_t>& frames = send_frames_;
    frames.clear();
    frames.emplace_back(send_encoded_.data(), send_encoded_.size());
    for (const Payload& payload : call->payloads) frames.push_back(internal::PayloadFrame(payload));
    connection_->dealer_waiter().MarkUsed();
    const internal::SendStatus sent = internal::SendMessage(connection_->dealer(), frames);
    frames.clear();  // a frame ZeroMQ did not take releases its payload now
    if (sent != internal::SendStatus::kSent) return;  // high-water mark: wait for ZMQ_POLLOUT
    if (++call->attempts > 1) retries_.fetch_add(1, std::memory_order_relaxed);
    pending_.MarkSent();
  }
}

void Client::Impl::ExpireDeadlines() {
  for (std::unique_ptr<CallRecord>& call : pending_.TakeExpired(Clock::now())) {
    deadline_exceeded_.fetch_add(1, std::memory_order_relaxed);
    if (call->in_flight) late_reply_possible_ = true;
    const std::string message = options_.name + ": call to '" + call->method + "' on " +
                                options_.endpoint + " exceeded its deadline of " +
                                std::to_string(call->timeout.count()) + " ms";
    Fail(std::move(call), StatusCode::kDeadlineExceeded, message);
  }
}

void Client::Impl::Shutdown() {
  const std::string message = options_.name + " closed";
  for (std::unique_ptr<CallRecord>& call : mailbox_.Close()) {
    Fail(std::move(call), StatusCode::kCancelled, message);
  }
  for (std::unique_ptr<CallRecord>& call : pending_.TakeAll()) {
    Fail(std::move(call), StatusCode::kCancelled, message);
  }
  connection_.reset();
}

}  // namespace rlswarm::rpc
