#pragma once

// Test helpers shared by the rpc tests: a server on a free loopback port, a
// client for it, and waiting for a reply with a bound.

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>

#include "rpc/client.h"
#include "rpc/server.h"

namespace rlswarm::rpc::testing {

inline ServerOptions LocalServerOptions() {
  ServerOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.name = "test-server";
  return options;
}

inline ClientOptions ClientFor(const std::string& endpoint) {
  ClientOptions options;
  options.endpoint = endpoint;
  options.default_timeout = std::chrono::seconds(10);
  options.name = "test-client";
  return options;
}

inline ClientOptions ClientFor(const Server& server) { return ClientFor(server.endpoint()); }

// The reply, or std::runtime_error if none came within 20 s.
inline Reply Get(std::future<Reply>& future) {
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    throw std::runtime_error("no reply");
  }
  return future.get();
}

}  // namespace rlswarm::rpc::testing
