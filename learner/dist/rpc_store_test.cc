// The learner's own rendezvous store (store_server.h, rpc_store.h) over real
// ZeroMQ sockets on loopback: TCPStore's semantics, blocking gets answered by
// a set from another client, timeouts, bad requests, the bound interface,
// CURVE, and a client that starts before its server.

#include "learner/dist/rpc_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "common/testing/files.h"
#include "learner/runtime/store_server.h"
#include "rpc/client.h"
#include "rpc/security.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> V(const std::string& s) { return {s.begin(), s.end()}; }
std::string S(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

c10::intrusive_ptr<RpcStore> ClientOf(const StoreServer& server,
                                      std::chrono::milliseconds timeout = 2000ms,
                                      rpc::SecurityOptions security = {}) {
  return c10::make_intrusive<RpcStore>(
      RpcStoreOptions{StoreEndpoint("127.0.0.1", server.port()), timeout, security});
}

TEST(RpcStoreTest, HasTheSemanticsOfTcpStore) {
  StoreServer server({});
  auto store = ClientOf(server);
  store->set("a", V("one"));
  EXPECT_EQ(S(store->get("a")), "one");
  store->set("a", V("two"));  // overwrites
  EXPECT_EQ(S(store->get("a")), "two");
  EXPECT_EQ(store->add("n", 5), 5);  // a missing counter starts at 0
  EXPECT_EQ(store->add("n", -2), 3);
  EXPECT_EQ(S(store->get("n")), "3");                 // counters are decimal text, as TCPStore's
  EXPECT_THROW(store->add("a", 1), InvalidArgument);  // "two" is not a number
  // compareSet: set when the current value is the expected one, or when the
  // key is missing and the expected value is empty; returns what is held.
  EXPECT_EQ(S(store->compareSet("c", V("x"), V("y"))), "x");  // missing, not set
  EXPECT_FALSE(store->check({"c"}));
  EXPECT_EQ(S(store->compareSet("c", {}, V("first"))), "first");
  EXPECT_EQ(S(store->compareSet("c", V("other"), V("no"))), "first");
  EXPECT_EQ(S(store->compareSet("c", V("first"), V("second"))), "second");
  EXPECT_TRUE(store->check({"a", "n", "c"}));
  EXPECT_FALSE(store->check({"a", "missing"}));
  EXPECT_EQ(store->getNumKeys(), 3);
  EXPECT_TRUE(store->deleteKey("a"));
  EXPECT_FALSE(store->deleteKey("a"));
  EXPECT_EQ(store->getNumKeys(), 2);
  EXPECT_EQ(server.num_keys(), 2u);
  store->set("empty", {});  // an empty value is a value
  EXPECT_TRUE(store->check({"empty"}));
  EXPECT_TRUE(S(store->get("empty")).empty());
}

TEST(RpcStoreTest, AGetBlocksUntilAnotherClientSetsTheKey) {
  StoreServer server({});
  auto reader = ClientOf(server, 5000ms);
  auto writer = ClientOf(server);
  auto value = std::async(std::launch::async, [&] { return S(reader->get("late")); });
  auto waited = std::async(std::launch::async, [&] { reader->wait({"late", "later"}); });
  for (int i = 0; i < 200 && server.num_waiters() < 2; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(server.num_waiters(), 2u);  // held by the server, not polled
  EXPECT_EQ(value.wait_for(50ms), std::future_status::timeout);
  writer->set("late", V("here"));
  EXPECT_EQ(value.get(), "here");
  EXPECT_EQ(waited.wait_for(50ms), std::future_status::timeout);  // "later" is missing
  writer->set("later", V("too"));
  waited.get();
  EXPECT_EQ(server.num_waiters(), 0u);
}

TEST(RpcStoreTest, AGetOfAMissingKeyTimesOutNamingItAndIsForgotten) {
  StoreServer server({});
  auto store = ClientOf(server, 300ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    store->get("never");
    FAIL() << "a get of a missing key returned";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("'never'"), std::string::npos) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  EXPECT_THROW(store->wait({"never"}, 100ms), DeadlineExceeded);
  // A request drops the waiters whose callers gave up. The server counts a
  // waiter's deadline from when the wait arrived, a little after the client
  // started its clock, so a check sent the moment the client gave up can
  // reach the server before the waiter expires there (CI of 2026-12-05, under
  // load): the test sends checks until one comes after the server's deadline.
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(store->check({"never"}));
    if (server.num_waiters() == 0) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(server.num_waiters(), 0u);
}

TEST(RpcStoreTest, MalformedRequestsGetAnErrorAndTheServerGoesOn) {
  StoreServer server({});
  rpc::ClientOptions o;
  o.endpoint = StoreEndpoint("127.0.0.1", server.port());
  o.default_timeout = 2000ms;
  rpc::Client raw(o);
  EXPECT_THROW(raw.Invoke(store_method::kSet, {Payload::FromString("only a key")}),
               InvalidArgument);
  EXPECT_THROW(raw.Invoke(store_method::kAdd,
                          {Payload::FromString("n"), Payload::FromString("not an int64")}),
               InvalidArgument);
  EXPECT_THROW(raw.Invoke(store_method::kSet, {Payload::FromString(""), Payload::FromString("v")}),
               InvalidArgument);  // empty key
  EXPECT_THROW(raw.Invoke(store_method::kNumKeys, {Payload::FromString("x")}), InvalidArgument);
  EXPECT_THROW(raw.Invoke("store.unknown", {}), NotFound);
  auto store = ClientOf(server);
  store->set("k", V("v"));
  EXPECT_EQ(S(store->get("k")), "v");
}

TEST(RpcStoreTest, LimitsOnKeysAndValuesAreEnforced) {
  StoreServerOptions options;
  options.max_keys = 2;
  options.max_value_bytes = 8;
  StoreServer server(options);
  auto store = ClientOf(server);
  store->set("a", V("1"));
  store->set("b", V("2"));
  EXPECT_THROW(store->set("c", V("3")), ResourceExhausted);
  store->set("a", V("12345678"));  // overwriting is not adding
  EXPECT_THROW(store->set("a", V("123456789")), ResourceExhausted);
  EXPECT_EQ(S(store->get("a")), "12345678");
}

// Where the server listens, read from the kernel's table: the port is bound
// to 127.0.0.1 only (TCPStore in LibTorch 1.13 listens on every interface).
std::vector<std::string> ListeningAddressesOfPort(uint16_t port) {
  std::vector<std::string> found;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state != "0A") continue;  // LISTEN
    const auto colon = local.find(':');
    if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) {
      found.push_back(local.substr(0, colon));
    }
  }
  return found;
}

TEST(RpcStoreTest, ListensOnlyOnTheAddressItIsGiven) {
  StoreServer server({});
  EXPECT_EQ(ListeningAddressesOfPort(server.port()), std::vector<std::string>{"0100007F"});
  StoreServerOptions unknown_host;
  unknown_host.bind_address = "no-such-host.invalid";
  EXPECT_THROW(StoreServer{unknown_host}, Unavailable);
  // A port in use is a clear error, not a silent second store.
  StoreServerOptions taken;
  taken.port = server.port();
  EXPECT_THROW(StoreServer{taken}, Unavailable);
}

// A plain TCP listener on 127.0.0.1:`port` that accepts one connection within
// `timeout`: proof that a client is already trying to reach that port.
bool AcceptsAConnection(uint16_t port, std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool accepted = false;
  // The server that had the port closes its listener on ZeroMQ's I/O thread,
  // a moment after it returned: until then the port is still in use.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int bound = -1;
  while ((bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address))) != 0 &&
         errno == EADDRINUSE && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (bound == 0 && ::listen(fd, 1) == 0) {
    pollfd waiting{fd, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(timeout.count())) == 1) {
      const int peer = ::accept(fd, nullptr, nullptr);
      accepted = peer >= 0;
      if (peer >= 0) ::close(peer);
    }
  }
  ::close(fd);
  return accepted;
}

TEST(RpcStoreTest, AClientThatStartsBeforeItsServerGetsItsAnswer) {
  uint16_t port = 0;
  {
    StoreServer probe({});  // a port that was free a moment ago
    port = probe.port();
  }
  auto store =
      c10::make_intrusive<RpcStore>(RpcStoreOptions{StoreEndpoint("127.0.0.1", port), 5000ms, {}});
  auto value = std::async(std::launch::async, [&] { return S(store->get("k")); });
  // The client's connection reaches a listener that is not the server, and
  // is dropped: the client is first, and keeps retrying.
  ASSERT_TRUE(AcceptsAConnection(port, 3000ms));
  EXPECT_EQ(value.wait_for(0ms), std::future_status::timeout);
  StoreServerOptions same_port;
  same_port.port = port;
  StoreServer server(same_port);
  auto writer = ClientOf(server);
  writer->set("k", V("v"));
  EXPECT_EQ(value.get(), "v");
}

TEST(RpcStoreTest, WithCurveOnlyAuthorizedClientsAreServed) {
  rlswarm::testing::TempDir dir("rpc_store_curve");
  ASSERT_FALSE(dir.path().empty());
  const std::filesystem::path root(dir.path());
  std::filesystem::create_directories(root / "authorized");
  rpc::WriteKeyPair((root / "server").string(), rpc::GenerateKeyPair());
  rpc::WriteKeyPair((root / "alice").string(), rpc::GenerateKeyPair());
  rpc::WriteKeyPair((root / "mallory").string(), rpc::GenerateKeyPair());
  std::filesystem::copy_file(root / "alice.key", root / "authorized" / "alice.key");
  StoreServerOptions options;
  options.security.curve = true;
  options.security.server_secret_key_file = (root / "server.key_secret").string();
  options.security.authorized_clients_dir = (root / "authorized").string();
  StoreServer server(options);
  const auto client_security = [&](const std::string& name) {
    rpc::SecurityOptions s;
    s.curve = true;
    s.client_secret_key_file = (root / (name + ".key_secret")).string();
    s.server_public_key_file = (root / "server.key").string();
    return s;
  };
  auto alice = ClientOf(server, 2000ms, client_security("alice"));
  alice->set("k", V("v"));
  EXPECT_EQ(S(alice->get("k")), "v");
  auto mallory = ClientOf(server, 500ms, client_security("mallory"));
  EXPECT_THROW(mallory->check({"k"}), Error);
  auto plain = ClientOf(server, 500ms);  // no CURVE at all
  EXPECT_THROW(plain->check({"k"}), Error);
  EXPECT_EQ(server.num_keys(), 1u);
}

}  // namespace
}  // namespace rlswarm::learner
