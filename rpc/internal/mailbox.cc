#include "rpc/internal/mailbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/errors.h"

namespace rlswarm::rpc::internal {

EventFd::EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw Internal(std::string("eventfd: ") + std::strerror(errno));
}

EventFd::~EventFd() { ::close(fd_); }

void EventFd::Signal() {
  const std::uint64_t one = 1;
  // EAGAIN only if the counter would overflow: a wake-up is pending anyway.
  while (::write(fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

void EventFd::Drain() {
  std::uint64_t count = 0;
  // One read resets the counter; EAGAIN means nothing was pending.
  while (::read(fd_, &count, sizeof(count)) < 0 && errno == EINTR) {
  }
}

}  // namespace rlswarm::rpc::internal
