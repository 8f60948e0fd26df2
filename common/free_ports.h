#pragma once

// Ports on 127.0.0.1 that were free a moment ago (the kernel's choice for
// port 0), for programs that must be told a port before they bind it: a
// launcher handing its children their endpoints, a test starting a server
// that cannot report the port it picked. Another process may take such a
// port before it is bound: callers that can bind port 0 themselves should.

#include <vector>

namespace rlswarm {

// Throws Unavailable when no socket can be made or bound.
int PickFreePort();
// Whether 127.0.0.1:`port` can be bound now.
bool PortIsFree(int port);
// `count` consecutive free ports, none of them in `taken`; returns the
// first. Throws Unavailable after 100 tries.
int PickFreePorts(int count, const std::vector<int>& taken);

}  // namespace rlswarm
