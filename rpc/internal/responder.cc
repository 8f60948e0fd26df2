// Responder (declared in rpc/server.h): exactly one reply per request.

#include <spdlog/spdlog.h>

#include "rpc/internal/responder_state.h"

namespace rlswarm::rpc {
namespace internal {
namespace {

// The reply channel whose I/O thread is the calling thread, if any.
thread_local const ReplyChannel* served_channel = nullptr;

}  // namespace

void ReplyChannel::ServeOnThisThread() { served_channel = this; }

bool ReplyChannel::Post(OutgoingReply&& reply) {
  // The I/O thread sends its queued replies before it next sleeps, so a
  // reply made on it (an inline handler) needs no wake-up.
  if (served_channel == this) return mailbox.PostFromOwner(std::move(reply));
  return mailbox.Post(std::move(reply));
}

OutgoingReply MakeReply(std::string identity, std::uint64_t request_id, StatusCode status,
                        std::string message, std::vector<Payload> payloads,
                        std::size_t max_error_bytes) {
  if (message.size() > max_error_bytes) message.resize(max_error_bytes);
  return {std::move(identity), request_id, status, std::move(message), std::move(payloads)};
}

}  // namespace internal

Responder::State::~State() {
  if (replied.load(std::memory_order_acquire)) return;
  try {
    Send(StatusCode::kInternal, "handler of '" + method + "' did not reply", {});
  } catch (const std::exception& e) {
    spdlog::error("{}: cannot send the missing reply to request {}: {}", channel->server_name,
                  request_id, e.what());
  }
}

void Responder::State::Send(StatusCode status, std::string message, std::vector<Payload> payloads) {
  if (replied.exchange(true, std::memory_order_acq_rel)) {
    spdlog::warn("{}: request {} ('{}') already answered; extra reply ignored",
                 channel->server_name, request_id, method);
    return;
  }
  internal::OutgoingReply reply =
      internal::MakeReply(identity, request_id, status, std::move(message), std::move(payloads),
                          channel->max_error_bytes);
  if (!channel->Post(std::move(reply))) {
    spdlog::debug("{}: reply to request {} ('{}') dropped: server stopped", channel->server_name,
                  request_id, method);
  }
}

void Responder::Reply(std::vector<Payload> payloads) const {
  state_->Send(StatusCode::kOk, {}, std::move(payloads));
}

void Responder::Fail(StatusCode code, const std::string& message) const {
  if (code == StatusCode::kOk) {
    state_->Send(StatusCode::kInternal, "Responder::Fail called with OK: " + message, {});
    return;
  }
  state_->Send(code, message, {});
}

std::chrono::steady_clock::time_point Responder::deadline() const { return state_->deadline; }

bool Responder::replied() const { return state_->replied.load(std::memory_order_acquire); }

}  // namespace rlswarm::rpc
