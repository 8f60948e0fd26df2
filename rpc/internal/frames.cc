#include "rpc/internal/frames.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/errors.h"

namespace rlswarm::rpc::internal {
namespace {

// The hint of a zero-copy frame: keeps the payload's buffer alive until
// ZeroMQ calls ReleaseOwner, usually on one of its own I/O threads.
struct OwnerHold {
  std::shared_ptr<const void> owner;
  // Published with release before the frame is handed to ZeroMQ and read
  // with acquire in ReleaseOwner: the hand-over through ZeroMQ's own
  // (uninstrumented) queues is then visible to ThreadSanitizer too.
  std::atomic<bool> published{false};
};

void ReleaseOwner(void* /*data*/, void* hint) {
  auto* hold = static_cast<OwnerHold*>(hint);
  (void)hold->published.load(std::memory_order_acquire);
  delete hold;
}

}  // namespace

zmq::message_t PayloadFrame(const Payload& payload) {
  const std::span<const std::byte> bytes = payload.bytes();
  if (bytes.size() <= kCopiedFrameBytes || !payload.owner()) {
    return zmq::message_t(bytes.data(), bytes.size());
  }
  auto hold = std::make_unique<OwnerHold>();
  hold->owner = payload.owner();
  hold->published.store(true, std::memory_order_release);
  // ZeroMQ never writes to a frame it sends; the const_cast only fits its C API.
  zmq::message_t frame(const_cast<std::byte*>(bytes.data()), bytes.size(), &ReleaseOwner,
                       hold.get());
  hold.release();  // now owned by the frame
  return frame;
}

Payload AdoptFrame(zmq::message_t frame, const PayloadDescriptor& descriptor) {
  const std::size_t alignment = DTypeSize(descriptor.dtype);
  if (reinterpret_cast<std::uintptr_t>(frame.data()) % alignment != 0) {
    return Payload::Copy(descriptor.dtype, descriptor.shape, frame.data(), frame.size());
  }
  auto message = std::make_shared<zmq::message_t>(std::move(frame));
  const void* data = message->data();
  const std::size_t size = message->size();
  return Payload::Adopt(descriptor.dtype, descriptor.shape,
                        std::shared_ptr<const void>(message, data), data, size);
}

std::span<const std::byte> FrameBytes(const zmq::message_t& frame) {
  return {static_cast<const std::byte*>(frame.data()), frame.size()};
}

void DescribeInto(const std::vector<Payload>& payloads, std::vector<PayloadDescriptor>& out) {
  out.resize(payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    out[i].dtype = payloads[i].dtype();
    out[i].shape.assign(payloads[i].shape().begin(), payloads[i].shape().end());
  }
}

std::vector<PayloadDescriptor> Describe(const std::vector<Payload>& payloads) {
  std::vector<PayloadDescriptor> descriptors;
  DescribeInto(payloads, descriptors);
  return descriptors;
}

SendStatus SendMessage(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const bool last = i + 1 == frames.size();
    zmq::send_flags flags = last ? zmq::send_flags::none : zmq::send_flags::sndmore;
    if (i == 0) {
      // Only the first frame can meet a full pipe or a missing route: once it
      // is accepted, ZeroMQ accepts the rest of the message (the high-water
      // mark counts whole messages), so the later sends cannot block.
      flags = flags | zmq::send_flags::dontwait;
      try {
        if (!socket.send(frames[i], flags)) return SendStatus::kWouldBlock;
      } catch (const zmq::error_t& e) {
        if (e.num() == EHOSTUNREACH) return SendStatus::kUnreachable;
        throw;
      }
    } else {
      (void)socket.send(frames[i], flags);
    }
  }
  return SendStatus::kSent;
}

bool ReceiveMessage(zmq::socket_t& socket, std::size_t max_frames, ReceivedMessage& message,
                    bool wait) {
  message.frames.clear();
  message.too_many_frames = false;
  zmq::message_t frame;
  try {
    if (!socket.recv(frame, wait ? zmq::recv_flags::none : zmq::recv_flags::dontwait)) {
      return false;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
  while (true) {
    const bool more = frame.more();
    if (message.frames.size() < max_frames) {
      message.frames.push_back(std::move(frame));
    } else {
      message.too_many_frames = true;
    }
    if (!more) return true;
    // The parts of a message arrive together: this never waits.
    frame = zmq::message_t();
    (void)socket.recv(frame, zmq::recv_flags::none);
  }
}

int Poll(std::span<zmq_pollitem_t> items, std::chrono::milliseconds timeout) {
  while (true) {
    const int rc = zmq_poll(items.data(), static_cast<int>(items.size()),
                            static_cast<long>(timeout.count() < 0 ? -1 : timeout.count()));
    if (rc >= 0) return rc;
    if (zmq_errno() != EINTR) throw zmq::error_t();
  }
}

void SetHeartbeats(zmq::socket_t& socket, std::chrono::milliseconds interval,
                   std::chrono::milliseconds timeout) {
  if (interval.count() <= 0) return;
  socket.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(interval.count()));
  socket.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(timeout.count()));
  // TTL has a resolution of 100 ms and a maximum of 6553599 ms.
  socket.set(zmq::sockopt::heartbeat_ttl,
             static_cast<int>(std::min<std::int64_t>(timeout.count(), 6553599)));
}

std::string UniqueInprocEndpoint(std::string_view what) {
  static std::atomic<std::uint64_t> counter{0};
  return "inproc://rlswarm-" + std::string(what) + "-" +
         std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace rlswarm::rpc::internal
