#pragma once

// Internal: sleeping until a ZeroMQ socket or plain descriptors have work,
// with one poll(2) where zmq_poll makes three.
//
// A socket's ZMQ_FD is readable when commands wait for the socket (such as
// "this pipe has messages again"); it is no level-triggered "readable".
// libzmq sends such a command only to a socket that has found its pipes
// empty, so ZMQ_FD announces the next message only once the socket has
// processed its commands and found nothing: after a receive that found no
// message, or after ZMQ_EVENTS. Any other operation may have processed
// commands too (a send does, about once a millisecond), which leaves a
// message waiting with ZMQ_FD quiet. zmq_poll handles that by polling
// everything with timeout 0, asking ZMQ_EVENTS, sleeping in poll, and asking
// ZMQ_EVENTS again (each ZMQ_EVENTS is a getpid and a poll of libzmq's own
// descriptor); on this project's VMs those extra system calls cost about a
// microsecond per call on each side of a round trip.
//
// SocketWaiter keeps the socket's state instead: a loop that receives until
// the socket is empty and then does nothing else with it sleeps in a single
// poll(2); after anything else, one ZMQ_EVENTS check comes first.
//
// Thread-safety: none; used by the thread that owns the socket (or by
// whoever holds the lock that guards it).

#include <poll.h>

#include <chrono>
#include <span>
#include <zmq.hpp>

namespace rlswarm::rpc::internal {

class SocketWaiter {
 public:
  explicit SocketWaiter(zmq::socket_t& socket);  // reads ZMQ_FD once

  // Tell the waiter about every use of the socket: a non-blocking receive
  // that found no message (MarkEmpty), and anything else (MarkUsed): a
  // send, failed or not, a receive that got a message, a zmq_poll.
  void MarkEmpty() { known_empty_ = true; }
  void MarkUsed() { known_empty_ = false; }

  // Waits until the socket may be ready for `events` (ZMQ_POLLIN and/or
  // ZMQ_POLLOUT; returns true), until one of `others` has an event (its
  // revents say which; at most kMaxOthers), or until `timeout` passes
  // (negative: no limit). Returns true without sleeping when ZMQ_EVENTS
  // already shows `events`; others' revents are then 0. After true, the
  // caller tries the operation (a receive until nothing is left, a send),
  // then marks the outcome. ZMQ_POLLOUT is always checked with ZMQ_EVENTS
  // first: an empty receive says nothing about the send pipe. EINTR counts
  // as a wake-up with nothing ready.
  // Throws zmq::error_t if ZMQ_EVENTS fails, Internal if poll(2) does.
  bool Wait(short events, std::span<pollfd> others, std::chrono::milliseconds timeout);

  // Whether a receive may find a message: false at no cost when the socket
  // is known to be empty, else what ZMQ_EVENTS says. Throws zmq::error_t.
  bool MayHaveInput();

  static constexpr std::size_t kMaxOthers = 3;

 private:
  // ZMQ_EVENTS, noting whether the socket is now known to be empty.
  int ReadEvents();

  zmq::socket_t* socket_;
  int fd_;
  bool known_empty_ = false;
};

// poll(2) on plain descriptors, once: unlike zmq_poll it does not first
// poll everything with timeout 0. EINTR returns 0 (nothing ready). Throws
// Internal on other errors.
int PollDescriptors(std::span<pollfd> fds, std::chrono::milliseconds timeout);

}  // namespace rlswarm::rpc::internal
