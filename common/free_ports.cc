#include "common/free_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/errors.h"

namespace rlswarm {

int PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Unavailable("cannot create a socket to pick a port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw Unavailable("cannot bind 127.0.0.1:0 to pick a port");
  return ntohs(addr.sin_port);
}

bool PortIsFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

int PickFreePorts(int count, const std::vector<int>& taken) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int first = PickFreePort();
    bool ok = first + count - 1 <= 65535;
    for (int p = first; ok && p < first + count; ++p) {
      ok = std::find(taken.begin(), taken.end(), p) == taken.end() && (p == first || PortIsFree(p));
    }
    if (ok) return first;
  }
  throw Unavailable("cannot find " + std::to_string(count) + " consecutive free ports");
}

}  // namespace rlswarm
