#include "rpc/client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <thread>
#include <zmq.hpp>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "rpc/internal/client_connection.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/header_peek.h"
#include "rpc/internal/mailbox.h"
#include "rpc/internal/pending_calls.h"
#include "rpc/internal/socket_waiter.h"
#include "rpc/internal/status_exceptions.h"

namespace rlswarm::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using internal::CallRecord;

// The poll timeout never exceeds this, whatever the deadlines say.
constexpr std::chrono::milliseconds kMaxPollWait{1000};
// Replies read per poll round before new calls are sent.
constexpr int kRepliesPerRound = 1024;

// The client whose I/O thread this is (nullptr on other threads).
thread_local const void* tls_io_thread_of = nullptr;

}  // namespace

void ClientOptions::Validate() const {
  if (endpoint.empty()) throw InvalidArgument("rpc client endpoint is empty");
  if (default_timeout.count() <= 0) throw InvalidArgument("rpc client default_timeout must be > 0");
  if (heartbeat_interval.count() < 0) throw InvalidArgument("heartbeat_interval must be >= 0");
  if (heartbeat_interval.count() > 0 && heartbeat_timeout.count() <= 0) {
    throw InvalidArgument("heartbeat_timeout must be > 0 when heartbeats are on");
  }
  if (reconnect_backoff.count() <= 0) throw InvalidArgument("reconnect_backoff must be > 0");
  if (reconnect_backoff_max < reconnect_backoff) {
    throw InvalidArgument("reconnect_backoff_max must be >= reconnect_backoff");
  }
  if (max_attempts < 1) throw InvalidArgument("max_attempts must be >= 1");
  if (max_message_bytes <= 0 && max_message_bytes != -1) {
    throw InvalidArgument("rpc client max_message_bytes must be > 0 (or -1 for no limit)");
  }
  if (send_high_water_mark < 0) throw InvalidArgument("send_high_water_mark must be >= 0");
  security.Validate();
}

class Client::Impl {
 public:
  explicit Impl(ClientOptions options);
  ~Impl() { Close(); }

  void CallAsync(const std::string& method, std::vector<Payload> payloads, CallOptions options,
                 internal::CallDone done);
  // Leads its own call when the client is idle (see Client::Invoke); false
  // if it could not start (then nothing was sent and `call` is untouched).
  bool TryInvokeDirect(std::unique_ptr<CallRecord>& call, const std::atomic<bool>& finished);
  // Hands `call` to the I/O thread (fails it Cancelled once closed).
  void Post(std::unique_ptr<CallRecord> call);
  std::unique_ptr<CallRecord> MakeCall(const std::string& method, std::vector<Payload> payloads,
                                       CallOptions options, internal::CallDone done);
  void Close();
  ClientStats stats() const;

 private:
  void IoLoop();
  std::chrono::milliseconds PollTimeout(Clock::time_point now) const RLSWARM_REQUIRES(io_mu_);
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
  void Finish(std::unique_ptr<CallRecord> call, Reply* reply, std::exception_ptr error);
  void Fail(std::unique_ptr<CallRecord> call, StatusCode code, const std::string& message) {
    Finish(std::move(call), nullptr, internal::MakeStatusException(code, message));
  }

  const ClientOptions options_;
  internal::Mailbox<std::unique_ptr<CallRecord>> mailbox_;  // new calls
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
  Clock::time_point reconnect_at_ RLSWARM_GUARDED_BY(io_mu_);
  std::chrono::milliseconds backoff_ RLSWARM_GUARDED_BY(io_mu_);

  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<std::uint64_t> reconnects_{0};
  std::atomic<std::uint64_t> deadline_exceeded_{0};
  std::atomic<std::uint64_t> late_replies_{0};
  std::atomic<std::uint64_t> direct_calls_{0};
  std::atomic<std::uint64_t> pipelined_calls_{0};
};

Client::Impl::Impl(ClientOptions options)
    : options_(std::move(options)), backoff_(options_.reconnect_backoff) {
  options_.Validate();
  try {
    connection_ = std::make_unique<internal::ClientConnection>(options_);
  } catch (const zmq::error_t& e) {
    throw InvalidArgument(options_.name + ": cannot connect to '" + options_.endpoint +
                          "': " + e.what());
  }
  io_thread_ = std::thread([this] { IoLoop(); });
}

void Client::Impl::CallAsync(const std::string& method, std::vector<Payload> payloads,
                             CallOptions options, internal::CallDone done) {
  std::unique_ptr<CallRecord> call =
      MakeCall(method, std::move(payloads), options, std::move(done));
  if (tls_io_thread_of == this) {
    // From a completion callback on the I/O thread, which holds io_mu_: the
    // call joins the pending set at once and goes out in this round (the
    // loop sends after it handles replies), without a wake-up through the
    // mailbox. This is how a pipelined caller (the replay writer) keeps its
    // calls in flight with no thread hand-over at all.
    io_mu_.AssertHeld();  // the I/O thread runs completions under io_mu_
    if (stop_.load()) {
      Fail(std::move(call), StatusCode::kCancelled, options_.name + " is closed");
    } else {
      pipelined_calls_.fetch_add(1, std::memory_order_relaxed);
      pending_.Add(std::move(call));
    }
    return;
  }
  Post(std::move(call));
}

void Client::Impl::Post(std::unique_ptr<CallRecord> call) {
  if (!mailbox_.Post(std::move(call))) {
    // Closed: `call` is untouched, and no I/O thread will ever run it.
    Fail(std::move(call), StatusCode::kCancelled, options_.name + " is closed");
  }
}

std::unique_ptr<CallRecord> Client::Impl::MakeCall(const std::string& method,
                                                   std::vector<Payload> payloads,
                                                   CallOptions options, internal::CallDone done) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  auto call = std::make_unique<CallRecord>();
  call->id = next_id_.fetch_add(1, std::memory_order_relaxed);
  call->method = method;
  call->payloads = std::move(payloads);
  call->timeout = options.timeout.count() > 0 ? options.timeout : options_.default_timeout;
  call->deadline = Clock::now() + call->timeout;
  call->idempotent = options.idempotent;
  call->done = std::move(done);
  return call;
}

bool Client::Impl::TryInvokeDirect(std::unique_ptr<CallRecord>& call,
                                   const std::atomic<bool>& finished) {
  if (!io_mu_.TryLock()) return false;
  MutexLock lock(io_mu_, std::adopt_lock);
  // Only an idle client: the I/O thread sleeps without touching the socket,
  // nothing else is pending, and the connection is up.
  if (stop_.load() || !connection_ || !monitor_drained_ || !connection_->handshake_succeeded() ||
      !pending_.empty() || mailbox_.HasItems()) {
    return false;
  }
  pending_.Add(std::move(call));
  direct_calls_.fetch_add(1, std::memory_order_relaxed);
  // From here on the call is pending: whatever happens, this thread only
  // steps back and the I/O thread completes it (Invoke waits for that; its
  // outcome lives on its stack, so nothing may leave this with an exception).
  try {
    SendUnsent();
    // Wait for the reply on the socket. Anything that needs the I/O thread
    // (a posted call, a connection event) makes this thread step back; the
    // call stays pending and the I/O thread completes it as for Call.
    std::array<pollfd, 2> wake_or_event = {
        {{mailbox_.wake_fd(), POLLIN, 0}, {connection_->monitor_fd(), POLLIN, 0}}};
    internal::SocketWaiter& waiter = connection_->dealer_waiter();
    while (!finished.load(std::memory_order_acquire)) {
      ExpireDeadlines();
      if (finished.load(std::memory_order_acquire) || pending_.NextUnsent() != nullptr) break;
      if (waiter.Wait(ZMQ_POLLIN, wake_or_event, PollTimeout(Clock::now()))) {
        // Stops at its own reply, without the receive that would find the
        // socket empty: nothing else is expected, unless a call expired in
        // flight and the idle I/O thread watches the DEALER for its reply.
        ReceiveReplies(late_reply_possible_ ? nullptr : &finished);
      }
      if ((wake_or_event[0].revents | wake_or_event[1].revents) != 0 || mailbox_.HasItems()) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("{}: Invoke: {}; the I/O thread takes the call over", options_.name, e.what());
  }
  lock.Unlock();
  if (!finished.load(std::memory_order_acquire)) mailbox_.Wake();
  return true;
}

void Client::Impl::Close() {
  MutexLock lock(close_mutex_);
  stop_.store(true);
  if (!io_thread_.joinable()) return;
  if (std::this_thread::get_id() == io_thread_.get_id()) {
    // Called from a completion callback: the loop ends after this round and
    // the destructor joins it.
    return;
  }
  mailbox_.Wake();
  io_thread_.join();
}

ClientStats Client::Impl::stats() const {
  ClientStats s;
  s.calls = calls_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  s.reconnects = reconnects_.load(std::memory_order_relaxed);
  s.deadline_exceeded = deadline_exceeded_.load(std::memory_order_relaxed);
  s.late_replies = late_replies_.load(std::memory_order_relaxed);
  s.direct_calls = direct_calls_.load(std::memory_order_relaxed);
  s.pipelined_calls = pipelined_calls_.load(std::memory_order_relaxed);
  return s;
}

void Client::Impl::IoLoop() {
  tls_io_thread_of = this;
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

void Client::Impl::Finish(std::unique_ptr<CallRecord> call, Reply* reply,
                          std::exception_ptr error) {
  try {
    call->done(reply, std::move(error));
  } catch (const std::exception& e) {
    spdlog::error("{}: completion callback of '{}' threw: {}", options_.name, call->method,
                  e.what());
  } catch (...) {
    spdlog::error("{}: completion callback of '{}' threw", options_.name, call->method);
  }
}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

std::future<Reply> Client::Call(const std::string& method, std::vector<Payload> payloads,
                                CallOptions options) {
  auto promise = std::make_shared<std::promise<Reply>>();
  std::future<Reply> future = promise->get_future();
  impl_->CallAsync(method, std::move(payloads), options,
                   [promise](Reply* reply, std::exception_ptr error) mutable {
                     // Released here, so the caller's future usually holds
                     // the last reference and frees the result (and the
                     // exception) on its own thread.
                     auto done = std::move(promise);
                     if (error) {
                       done->set_exception(std::move(error));
                     } else {
                       done->set_value(std::move(*reply));
                     }
                   });
  return future;
}

Reply Client::Invoke(const std::string& method, std::vector<Payload> payloads,
                     CallOptions options) {
  // The completion may run on this thread (direct) or on the I/O thread.
  // It lives on this stack: the completion notifies while it holds `mu`, so
  // this thread cannot leave the wait below (and free it) before the
  // completion is done with it. The callback captures one pointer, which
  // std::function stores without allocating.
  struct Outcome {
    Mutex mu;
    CondVar done_cv;
    std::atomic<bool> finished{false};
    std::optional<Reply> reply RLSWARM_GUARDED_BY(mu);
    std::exception_ptr error RLSWARM_GUARDED_BY(mu);
  } outcome;
  Outcome* const shared = &outcome;
  std::unique_ptr<internal::CallRecord> call = impl_->MakeCall(
      method, std::move(payloads), options, [shared](Reply* reply, std::exception_ptr error) {
        MutexLock lock(shared->mu);
        if (error) {
          shared->error = std::move(error);
        } else {
          shared->reply = std::move(*reply);
        }
        shared->finished.store(true, std::memory_order_release);
        shared->done_cv.NotifyAll();
      });
  if (!impl_->TryInvokeDirect(call, outcome.finished)) {
    // The ordinary path; `call` still holds the record.
    impl_->Post(std::move(call));
  }
  MutexLock lock(outcome.mu);
  outcome.done_cv.Wait(lock, [&] { return outcome.finished.load(std::memory_order_acquire); });
  if (outcome.error) std::rethrow_exception(outcome.error);
  return std::move(*outcome.reply);
}

void Client::CallAsync(const std::string& method, std::vector<Payload> payloads,
                       CallOptions options, std::function<void(Reply*, std::exception_ptr)> done) {
  impl_->CallAsync(method, std::move(payloads), options, std::move(done));
}

void Client::Close() { impl_->Close(); }
ClientStats Client::stats() const { return impl_->stats(); }

}  // namespace rlswarm::rpc
