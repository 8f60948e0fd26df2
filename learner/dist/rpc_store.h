#pragma once

// The c10d::Store of the learner ranks: a client of StoreServer
// (store_server.h) over the project's rpc, which Gloo, NCCL, the watchdog's
// start and the async checkpoints' agreement use as they would a TCPStore.
//
// Thread-safe: calls from several threads go out concurrently on one
// connection (a get blocked in one thread does not hold up a set in another,
// unlike TCPStore's client). A get or wait that outlives its timeout throws
// DeadlineExceeded naming the keys; a store that is gone throws Unavailable.

#include <torch/csrc/api/include/torch/version.h>

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "learner/runtime/store_server.h"
#include "rpc/security.h"

namespace rlswarm::rpc {
class Client;
}

namespace rlswarm::learner {

struct RpcStoreOptions {
  std::string endpoint;  // "tcp://HOST:PORT" of the StoreServer
  std::chrono::milliseconds timeout{10000};
  rpc::SecurityOptions security;  // client side: own key pair, the server's public key
};

class RpcStore : public c10d::Store {
 public:
  // Connects in the background; the first call waits for the server (within
  // the timeout). `keep_alive` (when given) is a server this client keeps
  // running: the rank or harness that hosts the store holds it this way.
  explicit RpcStore(RpcStoreOptions options, std::shared_ptr<StoreServer> keep_alive = nullptr);
  ~RpcStore() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
#if TORCH_VERSION_MAJOR >= 2
  // A second connection to the same server (2.x's process groups clone the
  // store for their own threads).
  c10::intrusive_ptr<c10d::Store> clone() override;
#endif

  const std::string& endpoint() const { return options_.endpoint; }

 private:
  // c10d's timeout of 0 (kNoTimeout) means "wait as long as it takes".
  std::chrono::milliseconds CallTimeout(std::chrono::milliseconds timeout) const;

  RpcStoreOptions options_;
  std::shared_ptr<StoreServer> keep_alive_;
  std::unique_ptr<rpc::Client> client_;
};

// Hosts a StoreServer on `bind_address`:`port` (0 = a free port) and returns a
// client of it that keeps it running. `*bound_port` gets the port.
c10::intrusive_ptr<RpcStore> HostRpcStore(const std::string& bind_address, uint16_t port,
                                          std::chrono::milliseconds timeout,
                                          const rpc::SecurityOptions& server_security,
                                          const rpc::SecurityOptions& client_security,
                                          uint16_t* bound_port);

// "tcp://HOST:PORT" (an IPv6 address in brackets).
std::string StoreEndpoint(const std::string& host, uint16_t port);

}  // namespace rlswarm::learner
