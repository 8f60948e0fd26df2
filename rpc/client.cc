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
#include "rpc/internal/client_impl.h"
#include "rpc/internal/socket_waiter.h"

namespace rlswarm::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using internal::CallRecord;

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
  if (internal::client_io_thread_of == this) {
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
