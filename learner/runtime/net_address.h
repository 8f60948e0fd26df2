#pragma once

// Addresses of this host and of its peers: name resolution, printing an
// address, and the local address a route takes. Shared by the watchdog (its
// UDP heartbeats), the learner's rendezvous store (what it binds) and the
// learner command (the Gloo address). No LibTorch.

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace rlswarm::learner {

struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// The first getaddrinfo result for `host` (a name, or numeric only with
// AI_NUMERICHOST in `flags`) and `port`, of `family` (AF_UNSPEC: either).
// Throws Unavailable naming the host.
SocketAddress ResolveAddress(const std::string& host, uint16_t port, int flags = 0,
                             int family = AF_UNSPEC);

// The numeric host of an address and, when `port` is given, its port.
// Throws Unavailable when it cannot be printed.
std::string NumericHost(const sockaddr_storage& addr, socklen_t len, uint16_t* port = nullptr);

// The numeric address `host` resolves to (itself when already numeric; "*"
// stays "*"), IPv4 preferred; throws Unavailable when it does not resolve.
std::string NumericAddressOf(const std::string& host);

// The numeric local address the kernel routes to `host` from (a UDP
// connect, which sends nothing). Throws Unavailable when `host` does not
// resolve or is unreachable.
std::string LocalAddressTowards(const std::string& host);

}  // namespace rlswarm::learner
