#include "rpc/internal/socket_waiter.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/errors.h"

namespace rlswarm::rpc::internal {
namespace {

int PollOnce(pollfd* fds, std::size_t count, std::chrono::milliseconds timeout) {
  const int rc = ::poll(fds, count, timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
  if (rc >= 0) return rc;
  if (errno == EINTR) {
    for (std::size_t i = 0; i < count; ++i) fds[i].revents = 0;
    return 0;
  }
  throw Internal(std::string("poll: ") + std::strerror(errno));
}

}  // namespace

SocketWaiter::SocketWaiter(zmq::socket_t& socket)
    : socket_(&socket), fd_(socket.get(zmq::sockopt::fd)) {}

bool SocketWaiter::Wait(short events, std::span<pollfd> others, std::chrono::milliseconds timeout) {
  if (others.size() > kMaxOthers) throw Internal("SocketWaiter: too many descriptors");
  for (pollfd& other : others) other.revents = 0;
  if ((!known_empty_ || (events & ZMQ_POLLOUT) != 0) && (ReadEvents() & events) != 0) return true;
  std::array<pollfd, kMaxOthers + 1> fds;
  std::copy(others.begin(), others.end(), fds.begin());
  fds[others.size()] = pollfd{fd_, POLLIN, 0};
  PollOnce(fds.data(), others.size() + 1, timeout);
  for (std::size_t i = 0; i < others.size(); ++i) others[i].revents = fds[i].revents;
  if (fds[others.size()].revents == 0) return false;
  known_empty_ = false;  // commands wait: the next receive (or send) takes them
  return true;
}

bool SocketWaiter::MayHaveInput() { return !known_empty_ && (ReadEvents() & ZMQ_POLLIN) != 0; }

int SocketWaiter::ReadEvents() {
  // Processes the socket's commands: afterwards ZMQ_FD announces the next.
  const int events = socket_->get(zmq::sockopt::events);
  known_empty_ = (events & ZMQ_POLLIN) == 0;
  return events;
}

int PollDescriptors(std::span<pollfd> fds, std::chrono::milliseconds timeout) {
  return PollOnce(fds.data(), fds.size(), timeout);
}

}  // namespace rlswarm::rpc::internal
