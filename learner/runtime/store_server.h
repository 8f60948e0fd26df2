#pragma once

// The learner ranks' rendezvous store, served over the project's rpc.
//
// Why not c10d's TCPStore: in LibTorch 1.13 its server listens on every
// interface (TCPStoreOptions has no bind address) and nothing authenticates
// its clients; and torchrun 2.x's agent store speaks a newer TCPStore
// protocol than 1.13's client. This server binds the one address it is
// given, takes CURVE keys like every other rpc socket (security.curve), and
// is the same for both LibTorch builds. RpcStore (rpc_store.h) is the
// c10d::Store that talks to it.
//
// The semantics are TCPStore's: values are byte strings; `add` keeps a
// decimal counter; `get` and `wait` block until their keys exist (the
// server holds the reply: no worker thread or client polls); compareSet sets
// the desired value when the current one equals the expected one (or the key
// is missing and the expected value is empty) and returns the value now held.
// Every handler runs on the rpc server's I/O thread and never blocks.
//
// Bad input (a wrong number of payloads, an add operand that is not 8 bytes,
// a stored counter that is not a number, too many keys, waiters or bytes)
// gets an InvalidArgument or ResourceExhausted reply; nothing a client sends
// stops the server.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rpc/security.h"

namespace rlswarm::learner {

struct StoreServerOptions {
  // The numeric address or host name to bind (a name is resolved to its
  // first IPv4 address, then IPv6); never a wildcard unless given "*".
  std::string bind_address = "127.0.0.1";
  uint16_t port = 0;  // 0 = any free port (StoreServer::port())
  rpc::SecurityOptions security;
  std::size_t max_keys = 1 << 20;
  std::size_t max_value_bytes = 16 << 20;
  // Blocked gets and waits held at once (one per rank and thread is usual).
  std::size_t max_waiters = 1 << 16;
};

// The rpc method names (a client and a server of one build agree on them).
namespace store_method {
inline constexpr char kSet[] = "store.set";
inline constexpr char kGet[] = "store.get";
inline constexpr char kAdd[] = "store.add";
inline constexpr char kCompareSet[] = "store.compare_set";
inline constexpr char kDelete[] = "store.delete";
inline constexpr char kCheck[] = "store.check";
inline constexpr char kWait[] = "store.wait";
inline constexpr char kNumKeys[] = "store.num_keys";
}  // namespace store_method

class StoreServer {
 public:
  // Binds and starts serving. Throws Unavailable when the address does not
  // resolve or cannot be bound (port in use, an address of another host),
  // InvalidArgument for bad options.
  explicit StoreServer(StoreServerOptions options);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  uint16_t port() const;
  // "tcp://ADDRESS:PORT", what clients connect to when on this host.
  std::string endpoint() const;
  std::size_t num_keys() const;
  std::size_t num_waiters() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::learner
