#include "learner/runtime/net_address.h"

#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"

namespace rlswarm::learner {

SocketAddress ResolveAddress(const std::string& host, uint16_t port, int flags, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_DGRAM;  // one result per address, not one per socket type
  hints.ai_flags = flags;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw Unavailable("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  SocketAddress a;
  std::memcpy(&a.addr, found->ai_addr, found->ai_addrlen);
  a.len = found->ai_addrlen;
  ::freeaddrinfo(found);
  return a;
}

std::string NumericHost(const sockaddr_storage& addr, socklen_t len, uint16_t* port) {
  char host[NI_MAXHOST] = {};
  char service[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), service,
                    sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    throw Unavailable("cannot print a socket address");
  }
  if (port != nullptr) *port = static_cast<uint16_t>(std::stoi(service));
  return host;
}

std::string NumericAddressOf(const std::string& host) {
  if (host == "*") return host;
  SocketAddress a;
  try {
    a = ResolveAddress(host, 0, 0, AF_INET);
  } catch (const Unavailable&) {
    a = ResolveAddress(host, 0, 0, AF_INET6);
  }
  return NumericHost(a.addr, a.len);
}

std::string LocalAddressTowards(const std::string& host) {
  // Port 9 (discard) only gives connect() a destination; nothing is sent.
  const SocketAddress remote = ResolveAddress(host, 9);
  const int fd = ::socket(remote.addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&remote.addr), remote.len) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Unavailable("no route to '" + host + "': " + reason);
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  const int rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  const std::string reason = rc != 0 ? std::strerror(errno) : "";
  ::close(fd);
  if (rc != 0) throw Unavailable("getsockname: " + reason);
  return NumericHost(local, len);
}

}  // namespace rlswarm::learner
