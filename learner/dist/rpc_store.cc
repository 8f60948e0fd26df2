#include "learner/dist/rpc_store.h"

#include "common/errors.h"
#include "learner/runtime/net_address.h"
#include "rpc/client.h"

namespace rlswarm::learner {
namespace {

Payload BytesPayload(const std::vector<uint8_t>& bytes) {
  return Payload::Copy(DType::kUInt8, {static_cast<int64_t>(bytes.size())}, bytes.data(),
                       bytes.size());
}

std::vector<uint8_t> BytesOf(const Payload& payload) {
  const auto bytes = payload.bytes();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  return {data, data + bytes.size()};
}

std::string KeysText(const std::vector<std::string>& keys) {
  std::string text;
  for (std::size_t i = 0; i < keys.size() && i < 4; ++i) text += (i ? ", '" : "'") + keys[i] + "'";
  if (keys.size() > 4) text += " and " + std::to_string(keys.size() - 4) + " more";
  return text;
}

const Payload& OnlyPayload(const rpc::Reply& reply, const char* method) {
  if (reply.payloads.size() != 1) {
    throw Internal(std::string(method) + ": the store answered " +
                   std::to_string(reply.payloads.size()) + " payloads, expected 1");
  }
  return reply.payloads[0];
}

}  // namespace

std::string StoreEndpoint(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

RpcStore::RpcStore(RpcStoreOptions options, std::shared_ptr<StoreServer> keep_alive)
    : c10d::Store(options.timeout),
      options_(std::move(options)),
      keep_alive_(std::move(keep_alive)) {
  if (options_.endpoint.empty()) throw InvalidArgument("learner store: no endpoint");
  rpc::ClientOptions client;
  client.endpoint = options_.endpoint;
  client.default_timeout = options_.timeout;
  client.security = options_.security;
  client.name = "learner-store-client";
  client_ = std::make_unique<rpc::Client>(client);
}

RpcStore::~RpcStore() {
  client_->Close();  // before the server it may keep alive goes
}

std::chrono::milliseconds RpcStore::CallTimeout(std::chrono::milliseconds timeout) const {
  // About a year: "no timeout" without overflowing a steady_clock deadline.
  if (timeout == c10d::Store::kNoTimeout) return std::chrono::hours(24 * 365);
  return timeout;
}

namespace {

// Runs one store call; rlswarm errors come back with the endpoint, the
// method and the keys in their message, and keep their type.
template <class F>
auto Calling(const std::string& endpoint, const std::string& what, F&& call) {
  try {
    return call();
  } catch (const Error& e) {
    ThrowError(e.code(), "learner store at " + endpoint + ": " + what + ": " + e.what());
  }
}

}  // namespace

void RpcStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  Calling(options_.endpoint, "set '" + key + "'", [&] {
    // Setting a key to one value twice is setting it once: resent after a
    // reconnect.
    client_->Invoke(store_method::kSet, {Payload::FromString(key), BytesPayload(value)},
                    {.timeout = CallTimeout(timeout_), .idempotent = true});
  });
}

std::vector<uint8_t> RpcStore::compareSet(const std::string& key,
                                          const std::vector<uint8_t>& expected,
                                          const std::vector<uint8_t>& desired) {
  return Calling(options_.endpoint, "compareSet '" + key + "'", [&] {
    const rpc::Reply reply =
        client_->Invoke(store_method::kCompareSet,
                        {Payload::FromString(key), BytesPayload(expected), BytesPayload(desired)},
                        {.timeout = CallTimeout(timeout_)});
    return BytesOf(OnlyPayload(reply, store_method::kCompareSet));
  });
}

std::vector<uint8_t> RpcStore::get(const std::string& key) {
  return Calling(options_.endpoint,
                 "get '" + key + "' (waiting " + std::to_string(timeout_.count()) + " ms for it)",
                 [&] {
                   const rpc::Reply reply =
                       client_->Invoke(store_method::kGet, {Payload::FromString(key)},
                                       {.timeout = CallTimeout(timeout_), .idempotent = true});
                   return BytesOf(OnlyPayload(reply, store_method::kGet));
                 });
}

int64_t RpcStore::add(const std::string& key, int64_t value) {
  return Calling(options_.endpoint, "add '" + key + "'", [&] {
    const rpc::Reply reply = client_->Invoke(
        store_method::kAdd,
        {Payload::FromString(key),
         Payload::FromVector<int64_t>(DType::kInt64, {1}, std::vector<int64_t>{value})},
        {.timeout = CallTimeout(timeout_)});
    const auto sum = OnlyPayload(reply, store_method::kAdd).As<int64_t>();
    if (sum.size() != 1) throw Internal("store.add: the answer is not one int64");
    return sum[0];
  });
}

bool RpcStore::deleteKey(const std::string& key) {
  return Calling(options_.endpoint, "deleteKey '" + key + "'", [&] {
    const rpc::Reply reply = client_->Invoke(store_method::kDelete, {Payload::FromString(key)},
                                             {.timeout = CallTimeout(timeout_)});
    const auto bytes = OnlyPayload(reply, store_method::kDelete).bytes();
    return bytes.size() == 1 && bytes[0] != std::byte{0};
  });
}

bool RpcStore::check(const std::vector<std::string>& keys) {
  return Calling(options_.endpoint, "check " + KeysText(keys), [&] {
    std::vector<Payload> payloads;
    for (const std::string& key : keys) payloads.push_back(Payload::FromString(key));
    const rpc::Reply reply =
        client_->Invoke(store_method::kCheck, std::move(payloads),
                        {.timeout = CallTimeout(timeout_), .idempotent = true});
    const auto bytes = OnlyPayload(reply, store_method::kCheck).bytes();
    return bytes.size() == 1 && bytes[0] != std::byte{0};
  });
}

int64_t RpcStore::getNumKeys() {
  return Calling(options_.endpoint, "getNumKeys", [&] {
    const rpc::Reply reply = client_->Invoke(
        store_method::kNumKeys, {}, {.timeout = CallTimeout(timeout_), .idempotent = true});
    const auto n = OnlyPayload(reply, store_method::kNumKeys).As<int64_t>();
    if (n.size() != 1) throw Internal("store.num_keys: the answer is not one int64");
    return n[0];
  });
}

void RpcStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void RpcStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  Calling(options_.endpoint,
          "wait for " + KeysText(keys) + " (" + std::to_string(timeout.count()) + " ms)", [&] {
            std::vector<Payload> payloads;
            for (const std::string& key : keys) payloads.push_back(Payload::FromString(key));
            client_->Invoke(store_method::kWait, std::move(payloads),
                            {.timeout = CallTimeout(timeout), .idempotent = true});
          });
}

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<c10d::Store> RpcStore::clone() {
  return c10::make_intrusive<RpcStore>(options_, keep_alive_);
}
#endif

c10::intrusive_ptr<RpcStore> HostRpcStore(const std::string& bind_address, uint16_t port,
                                          std::chrono::milliseconds timeout,
                                          const rpc::SecurityOptions& server_security,
                                          const rpc::SecurityOptions& client_security,
                                          uint16_t* bound_port) {
  StoreServerOptions server;
  server.bind_address = bind_address;
  server.port = port;
  server.security = server_security;
  auto hosted = std::make_shared<StoreServer>(server);
  if (bound_port != nullptr) *bound_port = hosted->port();
  RpcStoreOptions client;
  const std::string address = NumericAddressOf(bind_address);
  client.endpoint = StoreEndpoint(address == "*" ? "127.0.0.1" : address, hosted->port());
  client.timeout = timeout;
  client.security = client_security;
  return c10::make_intrusive<RpcStore>(client, std::move(hosted));
}

}  // namespace rlswarm::learner
