#include "rpc/server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <zmq.hpp>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "rpc/internal/context.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/header_peek.h"
#include "rpc/internal/responder_state.h"
#include "rpc/internal/status_exceptions.h"
#include "rpc/internal/worker_pool.h"
#include "rpc/internal/zmq_security.h"

namespace rlswarm::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// Replies still queued when the ROUTER closes get this long to leave. The
// process context is never terminated, so linger never blocks anything.
constexpr int kLingerMs = 100;
// The routing id of the server's own wake-up socket (see WakeSocket).
constexpr std::string_view kWakeRoutingId = "rlswarm-server-wake";
// Longer client timeouts are treated as this (keeps time_point arithmetic
// far from overflow).
constexpr std::int64_t kMaxTimeoutMs = 365LL * 24 * 3600 * 1000;

// Logs the first few occurrences of a repeated problem, then every power of two.
bool ShouldLog(std::uint64_t count) { return count <= 10 || (count & (count - 1)) == 0; }

// Wakes the server's I/O thread, which sleeps inside ZeroMQ's receive on the
// ROUTER (one poll(2), as a raw ZeroMQ server does; see IoLoop): an empty
// message from an inproc DEALER connected to the ROUTER. It connects before
// the ROUTER binds its public endpoint, and a ROUTER refuses a second peer
// with a routing id it already has, so no remote peer can pose as it.
// Thread-safety: Wake from any thread (a mutex guards the socket).
class WakeSocket {
 public:
  explicit WakeSocket(const std::string& inproc_endpoint)
      : dealer_(internal::ProcessContext(), zmq::socket_type::dealer) {
    dealer_.set(zmq::sockopt::linger, 0);
    dealer_.set(zmq::sockopt::routing_id, zmq::buffer(kWakeRoutingId));
    dealer_.connect(inproc_endpoint);
  }

  // Never blocks or throws: the mailbox coalesces wake-ups, so at most a
  // couple are ever queued; once the ROUTER is closed they go nowhere.
  void Wake() noexcept {
    MutexLock lock(mu_);
    try {
      (void)dealer_.send(zmq::message_t(), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::error("rpc server wake-up: {}", e.what());
    }
  }

 private:
  Mutex mu_;
  zmq::socket_t dealer_ RLSWARM_GUARDED_BY(mu_);
};

}  // namespace

void ServerOptions::Validate() const {
  if (endpoint.empty()) throw InvalidArgument("rpc server endpoint is empty");
  if (num_workers < 1) throw InvalidArgument("rpc server num_workers must be >= 1");
  if (max_queued_requests < 1) throw InvalidArgument("rpc server max_queued_requests must be >= 1");
  if (max_message_bytes <= 0 && max_message_bytes != -1) {
    throw InvalidArgument("rpc server max_message_bytes must be > 0 (or -1 for no limit)");
  }
  if (send_high_water_mark < 0 || receive_high_water_mark < 0) {
    throw InvalidArgument("rpc server high-water marks must be >= 0");
  }
  if (heartbeat_interval.count() < 0) throw InvalidArgument("heartbeat_interval must be >= 0");
  if (heartbeat_interval.count() > 0 && heartbeat_timeout.count() <= 0) {
    throw InvalidArgument("heartbeat_timeout must be > 0 when heartbeats are on");
  }
  security.Validate();
}

class Server::Impl {
 public:
  explicit Impl(ServerOptions options) : options_(std::move(options)) { options_.Validate(); }
  ~Impl() { Stop(); }

  void Register(const std::string& method, Handler handler, HandlerOptions options);
  void Start();
  std::string endpoint() const;
  void Stop();
  ServerStats stats() const;

 private:
  enum class State { kNew, kRunning, kStopped };
  struct Registered {
    Handler handler;
    HandlerOptions options;
  };

  void IoLoop();
  // Whether `message` is the wake-up socket's (see WakeSocket).
  bool IsWakeUp(const internal::ReceivedMessage& message) const;
  void HandleRequest(internal::ReceivedMessage& message);
  void RejectMalformed(const std::string& identity, std::optional<std::uint64_t> request_id,
                       const std::string& reason);
  void SendDirect(const std::string& identity, std::uint64_t request_id, StatusCode status,
                  std::string message);
  void SendReply(internal::OutgoingReply& reply);
  void RunTask(internal::ServerTask& task);

  const ServerOptions options_;
  std::unordered_map<std::string, Registered> handlers_;  // frozen at Start

  mutable Mutex lifecycle_mutex_;
  State state_ RLSWARM_GUARDED_BY(lifecycle_mutex_) = State::kNew;
  std::string endpoint_ RLSWARM_GUARDED_BY(lifecycle_mutex_);

  std::shared_ptr<internal::ReplyChannel> channel_;
  std::unique_ptr<internal::ZapDomain> zap_domain_;  // outlives router_
  zmq::socket_t router_;                             // used only by io_thread_
  // io_thread_'s buffers, kept between requests so that a request allocates
  // nothing for its headers, frame list or sizes.
  Header request_header_;
  std::vector<std::size_t> frame_sizes_;
  Header reply_header_;
  std::string reply_encoded_;
  std::vector<zmq::message_t> reply_frames_;
  std::unique_ptr<internal::WorkerPool> workers_;
  std::thread io_thread_;
  std::atomic<bool> stop_io_{false};

  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> replies_{0};
  std::atomic<std::uint64_t> malformed_{0};
  std::atomic<std::uint64_t> unknown_method_{0};
  std::atomic<std::uint64_t> rejected_queue_full_{0};
  std::atomic<std::uint64_t> expired_in_queue_{0};
  std::atomic<std::uint64_t> replies_dropped_{0};
};

void Server::Impl::Register(const std::string& method, Handler handler,
                            HandlerOptions handler_options) {
  MutexLock lock(lifecycle_mutex_);
  if (state_ != State::kNew) {
    throw FailedPrecondition(options_.name + ": Register('" + method + "') after Start");
  }
  if (method.empty()) throw InvalidArgument(options_.name + ": empty method name");
  if (method.size() > options_.limits.max_method_bytes) {
    throw InvalidArgument(options_.name + ": method name '" + method + "' is too long");
  }
  if (!handler) throw InvalidArgument(options_.name + ": empty handler for '" + method + "'");
  if (!handlers_.emplace(method, Registered{std::move(handler), handler_options}).second) {
    throw InvalidArgument(options_.name + ": method '" + method + "' registered twice");
  }
}

void Server::Impl::Start() {
  MutexLock lock(lifecycle_mutex_);
  if (state_ != State::kNew) {
    throw FailedPrecondition(options_.name + ": Start called twice or after Stop");
  }
  zmq::socket_t router(internal::ProcessContext(), zmq::socket_type::router);
  router.set(zmq::sockopt::linger, kLingerMs);
  // Without it ROUTER silently drops replies to a peer that is gone or slow.
  router.set(zmq::sockopt::router_mandatory, 1);
  router.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
  router.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
  router.set(zmq::sockopt::rcvhwm, options_.receive_high_water_mark);
  internal::SetHeartbeats(router, options_.heartbeat_interval, options_.heartbeat_timeout);
  std::unique_ptr<internal::ZapDomain> zap_domain =
      internal::ConfigureCurveServer(router, options_.security);
  // The wake-up socket is the ROUTER's first peer (see WakeSocket).
  const std::string wake_endpoint = internal::UniqueInprocEndpoint("rpc-server-wake");
  router.bind(wake_endpoint);
  auto wake_socket = std::make_shared<WakeSocket>(wake_endpoint);
  try {
    router.bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
    throw Unavailable(options_.name + ": cannot bind " + options_.endpoint + ": " + e.what());
  }
  endpoint_ = router.get(zmq::sockopt::last_endpoint);

  channel_ = std::make_shared<internal::ReplyChannel>(
      options_.name, options_.limits.max_error_bytes,
      [wake_socket = std::move(wake_socket)] { wake_socket->Wake(); });
  router_ = std::move(router);
  zap_domain_ = std::move(zap_domain);
  workers_ =
      std::make_unique<internal::WorkerPool>(options_.num_workers, options_.max_queued_requests,
                                             [this](internal::ServerTask& task) { RunTask(task); });
  io_thread_ = std::thread([this] { IoLoop(); });
  state_ = State::kRunning;
  spdlog::info("{}: serving {} methods on {}", options_.name, handlers_.size(), endpoint_);
}

std::string Server::Impl::endpoint() const {
  MutexLock lock(lifecycle_mutex_);
  return endpoint_;
}

void Server::Impl::Stop() {
  {
    MutexLock lock(lifecycle_mutex_);
    const State previous = std::exchange(state_, State::kStopped);
    if (previous != State::kRunning) return;
  }
  // Workers first, while the I/O thread still sends their replies: queued
  // requests are answered Unavailable, running handlers finish.
  for (internal::ServerTask& task : workers_->Close()) {
    task.responder.Fail(StatusCode::kUnavailable, options_.name + " is stopping");
  }
  workers_->Join();
  stop_io_.store(true);
  channel_->mailbox.Wake();
  io_thread_.join();
  zap_domain_.reset();
  spdlog::info("{}: stopped", options_.name);
}

ServerStats Server::Impl::stats() const {
  ServerStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.replies = replies_.load(std::memory_order_relaxed);
  s.malformed = malformed_.load(std::memory_order_relaxed);
  s.unknown_method = unknown_method_.load(std::memory_order_relaxed);
  s.rejected_queue_full = rejected_queue_full_.load(std::memory_order_relaxed);
  s.expired_in_queue = expired_in_queue_.load(std::memory_order_relaxed);
  s.replies_dropped = replies_dropped_.load(std::memory_order_relaxed);
  return s;
}

void Server::Impl::IoLoop() {
  channel_->ServeOnThisThread();
  const std::size_t max_frames = options_.limits.max_payloads + 2;
  internal::ReceivedMessage message;
  std::vector<internal::OutgoingReply> replies;  // reused: no allocation per round
  while (!stop_io_.load()) {
    try {
      // Sleeps inside ZeroMQ's receive, which arms the ROUTER's pipes and
      // waits on libzmq's own descriptor in one poll(2), as a raw ZeroMQ
      // server's blocking receive does; zmq_poll (or a poll on ZMQ_FD)
      // would cost two more system calls per request. Replies posted by
      // other threads wake it with a message (see WakeSocket).
      if (internal::ReceiveMessage(router_, max_frames, message, /*wait=*/true) &&
          !IsWakeUp(message)) {
        try {
          HandleRequest(message);
        } catch (const std::exception& e) {
          // The replies already queued must still be sent below.
          spdlog::error("{}: I/O loop: {}", options_.name, e.what());
        }
      }
      // Every round, so replies (an inline handler's, the workers') go out
      // before the next request is read, and a flood of requests cannot
      // starve the workers' replies.
      channel_->mailbox.Take(replies);
      for (internal::OutgoingReply& reply : replies) SendReply(reply);
      replies.clear();  // frees the sent payloads now, keeps the capacity
    } catch (const std::exception& e) {
      spdlog::error("{}: I/O loop: {}", options_.name, e.what());
    }
  }
  // Last replies (the workers have been joined), then no more.
  try {
    for (internal::OutgoingReply& reply : channel_->mailbox.Take()) SendReply(reply);
    for (internal::OutgoingReply& reply : channel_->mailbox.Close()) SendReply(reply);
  } catch (const std::exception& e) {
    spdlog::error("{}: sending the last replies: {}", options_.name, e.what());
  }
  router_.close();
}

bool Server::Impl::IsWakeUp(const internal::ReceivedMessage& message) const {
  return !message.frames.empty() && message.frames[0].size() == kWakeRoutingId.size() &&
         std::memcmp(message.frames[0].data(), kWakeRoutingId.data(), kWakeRoutingId.size()) == 0;
}

void Server::Impl::HandleRequest(internal::ReceivedMessage& message) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  std::vector<zmq::message_t>& frames = message.frames;
  if (frames.size() < 2) {
    RejectMalformed({}, std::nullopt, "message without a header frame");
    return;
  }
  const std::string identity(static_cast<const char*>(frames[0].data()), frames[0].size());
  const std::span<const std::byte> header_bytes = internal::FrameBytes(frames[1]);
  Header& header = request_header_;
  try {
    DecodeHeader(header_bytes, options_.limits, header);
  } catch (const InvalidArgument& e) {
    RejectMalformed(identity, internal::PeekRequestId(header_bytes, options_.limits), e.what());
    return;
  }
  if (header.kind != MessageKind::kRequest) {
    RejectMalformed(identity, header.request_id, "a server accepts requests only");
    return;
  }
  if (message.too_many_frames) {
    RejectMalformed(identity, header.request_id,
                    "more than " + std::to_string(options_.limits.max_payloads) + " payloads");
    return;
  }
  std::vector<std::size_t>& sizes = frame_sizes_;
  sizes.clear();
  for (std::size_t i = 2; i < frames.size(); ++i) sizes.push_back(frames[i].size());
  try {
    CheckPayloadFrames(header, sizes, options_.limits);
  } catch (const InvalidArgument& e) {
    RejectMalformed(identity, header.request_id, e.what());
    return;
  }
  const auto handler = handlers_.find(header.method);
  if (handler == handlers_.end()) {
    const std::uint64_t n = unknown_method_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (ShouldLog(n)) {
      spdlog::warn("{}: unknown method '{}' ({} so far)", options_.name, header.method, n);
    }
    SendDirect(identity, header.request_id, StatusCode::kNotFound,
               options_.name + ": unknown method '" + header.method + "'");
    return;
  }

  Request request;
  request.method = std::move(header.method);
  request.idempotent = header.idempotent;
  request.deadline =
      header.timeout_ms > 0
          ? Clock::now() + std::chrono::milliseconds(std::min(header.timeout_ms, kMaxTimeoutMs))
          : Clock::time_point::max();
  request.payloads.reserve(header.payloads.size());
  for (std::size_t i = 0; i < header.payloads.size(); ++i) {
    request.payloads.push_back(internal::AdoptFrame(std::move(frames[i + 2]), header.payloads[i]));
  }
  auto state = std::make_shared<Responder::State>(channel_, identity, header.request_id,
                                                  request.method, request.deadline);
  internal::ServerTask task{&handler->second.handler, std::move(request),
                            Responder(std::move(state))};
  if (handler->second.options.run_on_io_thread) {
    RunTask(task);  // its reply, if made now, is sent later in this round
    return;
  }
  switch (workers_->TryPush(task)) {
    case internal::WorkerPool::PushResult::kQueued:
      return;
    case internal::WorkerPool::PushResult::kFull: {
      const std::uint64_t n = rejected_queue_full_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (ShouldLog(n)) {
        spdlog::warn("{}: request queue full ({}), rejected {} so far", options_.name,
                     options_.max_queued_requests, n);
      }
      task.responder.Fail(StatusCode::kResourceExhausted,
                          options_.name + ": request queue full (" +
                              std::to_string(options_.max_queued_requests) + " requests)");
      return;
    }
    case internal::WorkerPool::PushResult::kClosed:
      task.responder.Fail(StatusCode::kUnavailable, options_.name + " is stopping");
      return;
  }
}

void Server::Impl::RejectMalformed(const std::string& identity,
                                   std::optional<std::uint64_t> request_id,
                                   const std::string& reason) {
  const std::uint64_t n = malformed_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (ShouldLog(n)) {
    spdlog::warn("{}: malformed request ({}), {} ({} so far)", options_.name, reason,
                 request_id ? "answered InvalidArgument" : "dropped", n);
  }
  if (request_id) {
    SendDirect(identity, *request_id, StatusCode::kInvalidArgument,
               options_.name + ": malformed request: " + reason);
  }
}

void Server::Impl::SendDirect(const std::string& identity, std::uint64_t request_id,
                              StatusCode status, std::string message) {
  internal::OutgoingReply reply = internal::MakeReply(
      identity, request_id, status, std::move(message), {}, options_.limits.max_error_bytes);
  SendReply(reply);
}

void Server::Impl::SendReply(internal::OutgoingReply& reply) {
  Header& header = reply_header_;
  header.kind = MessageKind::kReply;
  header.request_id = reply.request_id;
  header.status = reply.status;
  header.error_message.swap(reply.error_message);
  internal::DescribeInto(reply.payloads, header.payloads);
  EncodeHeader(header, reply_encoded_);
  std::vector<zmq::message_t>& frames = reply_frames_;
  frames.clear();
  frames.emplace_back(reply.identity.data(), reply.identity.size());
  frames.emplace_back(reply_encoded_.data(), reply_encoded_.size());
  for (const Payload& payload : reply.payloads) frames.push_back(internal::PayloadFrame(payload));
  const internal::SendStatus status = internal::SendMessage(router_, frames);
  frames.clear();  // a frame ZeroMQ did not take releases its payload now
  if (status == internal::SendStatus::kSent) {
    replies_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::uint64_t n = replies_dropped_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (ShouldLog(n)) {
    spdlog::warn("{}: reply dropped: {} ({} so far)", options_.name,
                 status == internal::SendStatus::kUnreachable ? "the client disconnected"
                                                              : "the client's send queue is full",
                 n);
  }
}

void Server::Impl::RunTask(internal::ServerTask& task) {
  if (Clock::now() >= task.request.deadline) {
    expired_in_queue_.fetch_add(1, std::memory_order_relaxed);
    task.responder.Fail(
        StatusCode::kDeadlineExceeded,
        options_.name + ": request to '" + task.request.method + "' expired in the server queue");
    return;
  }
  const std::string method = task.request.method;
  try {
    (*task.handler)(std::move(task.request), task.responder);
  } catch (...) {
    const internal::WireStatus status = internal::StatusFromException(std::current_exception());
    if (task.responder.replied()) {
      spdlog::warn("{}: handler of '{}' threw after replying: {}", options_.name, method,
                   status.message);
    } else {
      task.responder.Fail(status.code, status.message);
    }
  }
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;
void Server::Register(const std::string& method, Handler handler, HandlerOptions options) {
  impl_->Register(method, std::move(handler), options);
}
void Server::Start() { impl_->Start(); }
std::string Server::endpoint() const { return impl_->endpoint(); }
void Server::Stop() { impl_->Stop(); }
ServerStats Server::stats() const { return impl_->stats(); }

}  // namespace rlswarm::rpc
