#include "rpc/internal/mailbox.h"

#include "rpc/internal/context.h"
#include "rpc/internal/frames.h"

namespace rlswarm::rpc::internal {

InprocWake::InprocWake(std::string_view what)
    : receiver_(ProcessContext(), zmq::socket_type::pull),
      sender_(ProcessContext(), zmq::socket_type::push) {
  const std::string endpoint = UniqueInprocEndpoint(what);
  receiver_.set(zmq::sockopt::linger, 0);
  sender_.set(zmq::sockopt::linger, 0);
  receiver_.bind(endpoint);
  sender_.connect(endpoint);
}

void InprocWake::Signal() {
  if (!sender_) return;
  // At most one signal is in flight (Mailbox coalesces), so this never
  // meets the high-water mark; if it did, a signal is already pending.
  (void)sender_.send(zmq::message_t(), zmq::send_flags::dontwait);
}

void InprocWake::Drain() {
  if (!receiver_) return;
  zmq::message_t message;
  while (receiver_.recv(message, zmq::recv_flags::dontwait)) {
  }
}

void InprocWake::CloseSender() { sender_.close(); }

void InprocWake::CloseReceiver() { receiver_.close(); }

}  // namespace rlswarm::rpc::internal
