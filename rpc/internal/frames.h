#pragma once

// Internal: multipart messages and payload frames on ZeroMQ sockets, without
// copying payload bytes and without ever blocking the I/O thread that calls.
//
// Zero-copy in both directions:
//   * PayloadFrame hands a Payload's buffer to ZeroMQ (zmq_msg_init_data);
//     a heap copy of the Payload's shared owner rides along as the free
//     callback's hint, so the buffer lives until ZeroMQ has sent it, on
//     whichever thread ZeroMQ finishes with it.
//   * AdoptFrame wraps a received frame as a Payload whose owner holds the
//     zmq::message_t, so the bytes are read where ZeroMQ received them.

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "common/payload.h"
#include "rpc/wire.h"

namespace rlswarm::rpc::internal {

// A frame carrying `payload`'s bytes. Zero-copy, except that payloads of at
// most kCopiedFrameBytes are copied: copying that little costs less than
// zero-copy's bookkeeping (a heap-allocated owner handle, libzmq's own
// allocation for the frame, and atomic reference counts taken on this thread
// and released on ZeroMQ's), while a copied frame is one allocation (none up
// to 33 bytes, which ZeroMQ stores inside the message).
inline constexpr std::size_t kCopiedFrameBytes = 1024;
zmq::message_t PayloadFrame(const Payload& payload);

// A Payload viewing `frame` (sizes already checked by CheckPayloadFrames).
// ZeroMQ may receive a small frame into a shared buffer at any offset; a
// frame not aligned for its dtype is copied so that Payload::As<T> is safe.
Payload AdoptFrame(zmq::message_t frame, const PayloadDescriptor& descriptor);

std::span<const std::byte> FrameBytes(const zmq::message_t& frame);

// The descriptors (dtype, shape) of `payloads` for a header.
std::vector<PayloadDescriptor> Describe(const std::vector<Payload>& payloads);
// The same into `out`, reusing its vectors' capacity.
void DescribeInto(const std::vector<Payload>& payloads, std::vector<PayloadDescriptor>& out);

enum class SendStatus {
  kSent,
  kWouldBlock,   // EAGAIN: the peer's send high-water mark is reached
  kUnreachable,  // EHOSTUNREACH: ROUTER_MANDATORY and the peer is gone
};

// Sends `frames` as one multipart message without blocking: either the
// whole message is queued or nothing is (ZeroMQ checks the high-water mark
// and the route on the first frame only). Throws zmq::error_t on other
// errors.
SendStatus SendMessage(zmq::socket_t& socket, std::vector<zmq::message_t>& frames);

// Receives one whole multipart message if one is waiting (returns false if
// none). Keeps at most `max_frames` frames; the rest are received and
// discarded, and `too_many_frames` says so, so a peer sending a million
// empty frames costs no memory. With `wait`, it first waits inside
// ZeroMQ's receive, up to the socket's ZMQ_RCVTIMEO, for a message (false
// if none came, or a signal interrupted the wait).
struct ReceivedMessage {
  std::vector<zmq::message_t> frames;
  bool too_many_frames = false;
};
bool ReceiveMessage(zmq::socket_t& socket, std::size_t max_frames, ReceivedMessage& message,
                    bool wait = false);

// zmq_poll, retried on EINTR; timeout < 0 waits forever. Returns the number
// of ready items.
int Poll(std::span<zmq_pollitem_t> items, std::chrono::milliseconds timeout);

// ZMTP heartbeats: PING every `interval`; the connection is closed when
// nothing arrives for `timeout` after a PING; the peer is told (TTL) to close
// its side when it hears nothing from us for `timeout`. interval 0 = off.
void SetHeartbeats(zmq::socket_t& socket, std::chrono::milliseconds interval,
                   std::chrono::milliseconds timeout);

// "inproc://rlswarm-<what>-<n>", unique in this process.
std::string UniqueInprocEndpoint(std::string_view what);

}  // namespace rlswarm::rpc::internal
