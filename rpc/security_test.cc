// CURVE key files, SecurityOptions and the ZAP handler, over real sockets on
// tcp://127.0.0.1:* (raw ROUTER/DEALER on the rpc process context).

#include "rpc/security.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>
#include <zmq_addon.hpp>

#include "common/errors.h"
#include "rpc/internal/context.h"
#include "rpc/internal/repeat_limited_log.h"
#include "rpc/internal/zmq_security.h"

namespace rlswarm::rpc {
namespace {

namespace fs = std::filesystem;
using internal::ConfigureCurveClient;
using internal::ConfigureCurveServer;
using internal::ProcessContext;
using internal::ZapDomain;

constexpr auto kTimeout = std::chrono::seconds(10);
// How long a test watches for a message that must not arrive, after the
// event that decides it (a denial) has been observed.
constexpr auto kQuietPeriod = std::chrono::milliseconds(200);

// Waits until `condition` holds, checking every millisecond, for at most
// `timeout`. Returns whether it held.
bool WaitUntil(const std::function<bool()>& condition,
               std::chrono::steady_clock::duration timeout = kTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// All frames of the next message, or nullopt if none arrives within `timeout`.
std::optional<std::vector<zmq::message_t>> Receive(
    zmq::socket_t& socket, std::chrono::milliseconds timeout =
                               std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout)) {
  std::array<zmq::pollitem_t, 1> items{{{socket.handle(), 0, ZMQ_POLLIN, 0}}};
  if (zmq::poll(items.data(), items.size(), timeout) == 0) return std::nullopt;
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket, std::back_inserter(frames))) return std::nullopt;
  return frames;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A fresh directory per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "rlswarm_security_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // Writes <dir>/<name>.key and .key_secret.
  KeyPair MakeKeys(const std::string& name) {
    const KeyPair keys = GenerateKeyPair();
    WriteKeyPair(Path(name), keys);
    return keys;
  }

  // <dir>/<name>/ holding the public key files of `clients`.
  std::string AuthorizedDir(const std::string& name, const std::vector<std::string>& clients) {
    const std::string dir = Path(name);
    fs::create_directories(dir);
    for (const std::string& client : clients) {
      fs::copy_file(Path(client + ".key"), fs::path(dir) / (client + ".key"));
    }
    return dir;
  }

  std::string dir_;
};

using KeyFileTest = TempDirTest;

TEST_F(KeyFileTest, GeneratedKeysAreDistinctZ85Keys) {
  const KeyPair a = GenerateKeyPair();
  const KeyPair b = GenerateKeyPair();
  EXPECT_EQ(a.public_key.size(), 40u);
  EXPECT_EQ(a.secret_key.size(), 40u);
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_NE(a.secret_key, b.secret_key);
}

TEST_F(KeyFileTest, RoundTripsThePairAndItsPublicHalf) {
  const KeyPair keys = MakeKeys("node");
  const KeyPair secret = ReadKeyFile(Path("node.key_secret"));
  EXPECT_EQ(secret.public_key, keys.public_key);
  EXPECT_EQ(secret.secret_key, keys.secret_key);
  const KeyPair shared = ReadKeyFile(Path("node.key"));
  EXPECT_EQ(shared.public_key, keys.public_key);
  EXPECT_TRUE(shared.secret_key.empty());
  EXPECT_EQ(ReadAll(Path("node.key")).find(keys.secret_key), std::string::npos);
  // Nothing but the two files (no temporary file left behind).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);
}

TEST_F(KeyFileTest, SecretFileIsReadableByItsOwnerOnly) {
  MakeKeys("node");
  struct stat st;
  ASSERT_EQ(::stat(Path("node.key_secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(Path("node.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(KeyFileTest, WriteReplacesAnExistingPairWhole) {
  MakeKeys("node");
  const KeyPair second = MakeKeys("node");
  EXPECT_EQ(ReadKeyFile(Path("node.key_secret")).secret_key, second.secret_key);
  EXPECT_EQ(ReadKeyFile(Path("node.key")).public_key, second.public_key);
}

TEST_F(KeyFileTest, WriteRejectsAMismatchedPair) {
  KeyPair keys = GenerateKeyPair();
  keys.public_key = GenerateKeyPair().public_key;
  EXPECT_THROW(WriteKeyPair(Path("node"), keys), InvalidArgument);
  EXPECT_FALSE(fs::exists(Path("node.key_secret")));
}

TEST_F(KeyFileTest, WriteIntoAMissingDirectoryIsNotFoundAndNamesIt) {
  try {
    WriteKeyPair(Path("missing/node"), GenerateKeyPair());
    FAIL() << "no exception";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find(Path("missing/node")), std::string::npos) << e.what();
  }
}

TEST_F(KeyFileTest, MissingFileIsNotFoundAndNamed) {
  try {
    ReadKeyFile(Path("nobody.key"));
    FAIL() << "no exception";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find(Path("nobody.key")), std::string::npos) << e.what();
  }
}

TEST_F(KeyFileTest, BadFilesAreInvalidAndNameTheFileAndLine) {
  const KeyPair keys = GenerateKeyPair();
  const KeyPair other = GenerateKeyPair();
  const std::string comment = "# a comment\n\n";
  struct Case {
    const char* name;
    std::string text;
    std::string where;  // expected in the message, after the path
    std::string what;
  };
  const std::vector<Case> cases = {
      {"short", comment + "public-key = \"" + keys.public_key.substr(0, 39) + "\"\n",
       ":3:", "40 Z85 characters, got 39"},
      {"long", "public-key = \"" + keys.public_key + "0\"\n", ":1:", "got 41"},
      {"not_z85", "public-key = \"" + std::string(40, ',') + "\"\n", ":1:", "not valid Z85"},
      {"unquoted", "public-key = " + keys.public_key + "\n", ":1:", "double quotes"},
      {"unknown", "public-key = \"" + keys.public_key + "\"\nowner = \"me\"\n",
       ":2:", "unknown key 'owner'"},
      {"repeated",
       "public-key = \"" + keys.public_key + "\"\npublic-key = \"" + keys.public_key + "\"\n",
       ":2:", "repeats line 1"},
      {"no_equals", "public-key\n", ":1:", "expected"},
      {"empty", comment, ":", "no public-key line"},
      {"mismatch",
       "public-key = \"" + keys.public_key + "\"\nsecret-key = \"" + other.secret_key + "\"\n",
       ":2:", "does not belong"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Path(std::string(c.name) + ".key");
    WriteText(path, c.text);
    try {
      ReadKeyFile(path);
      ADD_FAILURE() << "no exception";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(path + c.where, 0), 0u) << message;
      EXPECT_NE(message.find(c.what), std::string::npos) << message;
    }
  }
}

TEST_F(KeyFileTest, AuthorizedKeysAreThePublicKeysOfEveryDotKeyFile) {
  const KeyPair a = MakeKeys("a");
  const KeyPair b = MakeKeys("b");
  fs::create_directories(Path("subdir.key"));  // not a file: ignored
  WriteText(Path("notes.txt"), "not a key");
  const std::vector<std::string> keys = ReadAuthorizedKeys(dir_);
  EXPECT_EQ(keys, (std::vector<std::string>{a.public_key, b.public_key}));
}

TEST_F(KeyFileTest, AuthorizedKeysFailClosed) {
  EXPECT_THROW(ReadAuthorizedKeys(Path("missing")), NotFound);
  MakeKeys("only_secret");
  fs::remove(Path("only_secret.key"));  // a .key_secret is not an authorization
  EXPECT_THROW(ReadAuthorizedKeys(dir_), NotFound);
  WriteText(Path("broken.key"), "public-key = \"tooshort\"\n");
  try {
    ReadAuthorizedKeys(dir_);
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(Path("broken.key") + ":1:"), std::string::npos)
        << e.what();
  }
}

TEST(SecurityOptionsTest, ValidateNamesTheMissingField) {
  SecurityOptions options;
  EXPECT_NO_THROW(options.Validate());  // off: nothing needed
  options.curve = true;
  EXPECT_THROW(options.Validate(), InvalidArgument);
  options.server_secret_key_file = "server.key_secret";
  try {
    options.Validate();
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("authorized_clients_dir"), std::string::npos);
  }
  options.authorized_clients_dir = "authorized";
  EXPECT_NO_THROW(options.Validate());
  options.server_public_key_file = "server.key";
  try {
    options.Validate();
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("client_secret_key_file"), std::string::npos);
  }
  options.client_secret_key_file = "client.key_secret";
  EXPECT_NO_THROW(options.Validate());
}

// Key files for a server and clients `alice` (authorized) and `mallory`
// (not), plus helpers for raw ROUTER servers and DEALER clients.
class CurveTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    server_keys_ = MakeKeys("server");
    alice_ = MakeKeys("alice");
    mallory_ = MakeKeys("mallory");
  }

  SecurityOptions ServerOptions(const std::string& authorized_dir) const {
    SecurityOptions o;
    o.curve = true;
    o.server_secret_key_file = Path("server.key_secret");
    o.authorized_clients_dir = authorized_dir;
    return o;
  }
  SecurityOptions ClientOptions(const std::string& client,
                                const std::string& server_key = "server.key") const {
    SecurityOptions o;
    o.curve = true;
    o.client_secret_key_file = Path(client + ".key_secret");
    o.server_public_key_file = Path(server_key);
    return o;
  }

  struct Server {
    // Declared first so that it outlives (is released after) the socket.
    std::unique_ptr<ZapDomain> domain;
    zmq::socket_t socket;
    std::string endpoint;
  };

  static std::unique_ptr<Server> StartServer(const SecurityOptions& options,
                                             zmq::socket_t* monitored = nullptr) {
    auto server = std::make_unique<Server>();
    server->socket = zmq::socket_t(ProcessContext(), zmq::socket_type::router);
    server->socket.set(zmq::sockopt::linger, 0);
    server->domain = ConfigureCurveServer(server->socket, options);
    if (monitored) *monitored = Monitor(server->socket);
    server->socket.bind("tcp://127.0.0.1:*");
    server->endpoint = server->socket.get(zmq::sockopt::last_endpoint);
    return server;
  }

  static zmq::socket_t Connect(const std::string& endpoint, const SecurityOptions& options) {
    zmq::socket_t client(ProcessContext(), zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    ConfigureCurveClient(client, options);
    client.connect(endpoint);
    return client;
  }

  // A PAIR socket receiving `socket`'s handshake events (zmq_socket_monitor).
  static zmq::socket_t Monitor(zmq::socket_t& socket) {
    static std::atomic<int> next{0};
    const std::string endpoint = "inproc://security_test.monitor." + std::to_string(next++);
    const int events = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    EXPECT_EQ(zmq_socket_monitor(socket.handle(), endpoint.c_str(), events), 0);
    zmq::socket_t monitor(ProcessContext(), zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(endpoint);
    return monitor;
  }

  // The next monitor event number, or nullopt after kTimeout.
  static std::optional<int> NextEvent(zmq::socket_t& monitor) {
    auto frames = Receive(monitor);
    if (!frames || frames->empty() || (*frames)[0].size() < 2) return std::nullopt;
    std::uint16_t event;
    std::memcpy(&event, (*frames)[0].data(), sizeof event);
    return event;
  }

  // Sends `text` from `client` and returns what `server` received (routing
  // id, payload), or nullopt if nothing arrives within `timeout`.
  static std::optional<std::vector<zmq::message_t>> SendAndReceive(
      zmq::socket_t& client, Server& server, const std::string& text,
      std::chrono::milliseconds timeout =
          std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout)) {
    client.send(zmq::buffer(text), zmq::send_flags::none);
    return Receive(server.socket, timeout);
  }

  // A full request/reply; returns the reply text ("" on timeout).
  static std::string RoundTrip(zmq::socket_t& client, Server& server, const std::string& text) {
    auto request = SendAndReceive(client, server, text);
    if (!request || request->size() != 2) return "";
    server.socket.send(zmq::buffer((*request)[0].data(), (*request)[0].size()),
                       zmq::send_flags::sndmore);
    const std::string reply = "re: " + text;
    server.socket.send(zmq::buffer(reply), zmq::send_flags::none);
    auto answer = Receive(client);
    return answer && answer->size() == 1 ? (*answer)[0].to_string() : "";
  }

  KeyPair server_keys_;
  KeyPair alice_;
  KeyPair mallory_;
};

// The ZAP User-Id of a received message. Its metadata was written by a
// ZeroMQ I/O thread and handed over through libzmq's pipes, which
// ThreadSanitizer cannot see (libzmq is not instrumented): scripts/tsan.supp
// names this function, so it must stay out of line.
[[gnu::noinline]] std::string ZapUserIdOf(zmq::message_t& message) {
  return std::string(message.gets("User-Id"));
}

TEST_F(CurveTest, AuthorizedClientCompletesARoundTripAndIsIdentifiedByItsKey) {
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})));
  ASSERT_NE(server->domain, nullptr);
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));

  client.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  auto request = Receive(server->socket);
  ASSERT_TRUE(request);
  ASSERT_EQ(request->size(), 2u);
  EXPECT_EQ((*request)[1].to_string(), "hello");
  // The ZAP handler's user id is the client's public key.
  EXPECT_EQ(ZapUserIdOf((*request)[1]), alice_.public_key);

  EXPECT_EQ(RoundTrip(client, *server, "ping"), "re: ping");
  EXPECT_EQ(server->domain->admitted(), 1u);
  EXPECT_EQ(server->domain->denied(), 0u);
}

TEST_F(CurveTest, UnknownClientKeyIsDeniedAndItsMessageNeverArrives) {
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})));
  zmq::socket_t intruder = Connect(server->endpoint, ClientOptions("mallory"));
  intruder.send(zmq::str_buffer("let me in"), zmq::send_flags::dontwait);
  ASSERT_TRUE(WaitUntil([&] { return server->domain->denied() >= 1; }));
  EXPECT_FALSE(Receive(server->socket, kQuietPeriod));

  // The server still serves authorized clients, and only them.
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));
  auto request = SendAndReceive(client, *server, "hello");
  ASSERT_TRUE(request);
  EXPECT_EQ((*request)[1].to_string(), "hello");
  EXPECT_FALSE(Receive(server->socket, kQuietPeriod));
  EXPECT_EQ(server->domain->admitted(), 1u);
}

TEST_F(CurveTest, ClientWithTheWrongServerKeyFailsTheHandshake) {
  zmq::socket_t monitor;
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})), &monitor);
  MakeKeys("impostor");  // alice believes impostor.key is the server's key
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice", "impostor.key"));
  client.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  const std::optional<int> event = NextEvent(monitor);
  ASSERT_TRUE(event);
  EXPECT_NE(*event, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  EXPECT_FALSE(Receive(server->socket, kQuietPeriod));
  // The server could not even decrypt the hello: no key reached ZAP.
  EXPECT_EQ(server->domain->admitted(), 0u);
}

TEST_F(CurveTest, PlainClientGetsNothingFromACurveServer) {
  zmq::socket_t monitor;
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})), &monitor);
  zmq::socket_t client = Connect(server->endpoint, SecurityOptions{});  // curve off
  client.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  const std::optional<int> event = NextEvent(monitor);
  ASSERT_TRUE(event);
  EXPECT_EQ(*event, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL);  // mechanism mismatch
  EXPECT_FALSE(Receive(server->socket, kQuietPeriod));
  EXPECT_FALSE(Receive(client, kQuietPeriod));
}

TEST_F(CurveTest, TwoServersInOneProcessEachAdmitOnlyTheirOwnClients) {
  auto for_alice = StartServer(ServerOptions(AuthorizedDir("only_alice", {"alice"})));
  auto for_mallory = StartServer(ServerOptions(AuthorizedDir("only_mallory", {"mallory"})));
  EXPECT_NE(for_alice->domain->name(), for_mallory->domain->name());

  zmq::socket_t alice_to_own = Connect(for_alice->endpoint, ClientOptions("alice"));
  zmq::socket_t alice_to_other = Connect(for_mallory->endpoint, ClientOptions("alice"));
  zmq::socket_t mallory_to_own = Connect(for_mallory->endpoint, ClientOptions("mallory"));
  zmq::socket_t mallory_to_other = Connect(for_alice->endpoint, ClientOptions("mallory"));
  alice_to_other.send(zmq::str_buffer("alice"), zmq::send_flags::dontwait);
  mallory_to_other.send(zmq::str_buffer("mallory"), zmq::send_flags::dontwait);

  EXPECT_EQ(RoundTrip(alice_to_own, *for_alice, "a"), "re: a");
  EXPECT_EQ(RoundTrip(mallory_to_own, *for_mallory, "m"), "re: m");
  ASSERT_TRUE(WaitUntil([&] { return for_alice->domain->denied() >= 1; }));
  ASSERT_TRUE(WaitUntil([&] { return for_mallory->domain->denied() >= 1; }));
  EXPECT_FALSE(Receive(for_alice->socket, kQuietPeriod));
  EXPECT_FALSE(Receive(for_mallory->socket, kQuietPeriod));
  EXPECT_EQ(for_alice->domain->admitted(), 1u);
  EXPECT_EQ(for_mallory->domain->admitted(), 1u);
}

TEST_F(CurveTest, ServerFailsClosedAtConfiguration) {
  zmq::socket_t socket(ProcessContext(), zmq::socket_type::router);
  socket.set(zmq::sockopt::linger, 0);
  fs::create_directories(Path("empty"));
  EXPECT_THROW(ConfigureCurveServer(socket, ServerOptions(Path("empty"))), NotFound);
  EXPECT_THROW(ConfigureCurveServer(socket, ServerOptions(Path("missing"))), NotFound);

  SecurityOptions public_only = ServerOptions(AuthorizedDir("authorized", {"alice"}));
  public_only.server_secret_key_file = Path("server.key");
  try {
    ConfigureCurveServer(socket, public_only);
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(Path("server.key")), std::string::npos) << e.what();
  }

  SecurityOptions no_dir = ServerOptions("");
  try {
    ConfigureCurveServer(socket, no_dir);
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("authorized_clients_dir"), std::string::npos);
  }
  EXPECT_THROW(ConfigureCurveClient(socket, ClientOptions("alice", "nobody.key")), NotFound);
  SecurityOptions no_server_key = ClientOptions("alice");
  no_server_key.server_public_key_file.clear();
  EXPECT_THROW(ConfigureCurveClient(socket, no_server_key), InvalidArgument);
}

TEST_F(CurveTest, ServerWithoutARunningZapHandlerAdmitsNobody) {
  zmq::socket_t monitor;
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})), &monitor);
  server->domain.reset();  // the only domain: the handler thread stops
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));
  client.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  const std::optional<int> event = NextEvent(monitor);
  ASSERT_TRUE(event);
  EXPECT_NE(*event, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);  // ZMQ_ZAP_ENFORCE_DOMAIN
  EXPECT_FALSE(Receive(server->socket, kQuietPeriod));
}

TEST_F(CurveTest, NoOpWhenCurveIsOff) {
  auto server = StartServer(SecurityOptions{});
  EXPECT_EQ(server->domain, nullptr);
  EXPECT_EQ(server->socket.get(zmq::sockopt::mechanism), ZMQ_NULL);
  zmq::socket_t client = Connect(server->endpoint, SecurityOptions{});
  EXPECT_EQ(RoundTrip(client, *server, "plain"), "re: plain");
}

TEST_F(CurveTest, HandlerRestartsAfterTheLastDomainIsReleased) {
  const std::string authorized = AuthorizedDir("authorized", {"alice"});
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    auto server = StartServer(ServerOptions(authorized));
    zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));
    EXPECT_EQ(RoundTrip(client, *server, "again"), "re: again");
  }
}

TEST_F(CurveTest, DomainsRegisterAndReleaseConcurrently) {
  const SecurityOptions options = ServerOptions(AuthorizedDir("authorized", {"alice"}));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        try {
          zmq::socket_t socket(ProcessContext(), zmq::socket_type::router);
          socket.set(zmq::sockopt::linger, 0);
          auto domain = ConfigureCurveServer(socket, options);
          if (!domain) ++failures;
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  // Still working afterwards.
  auto server = StartServer(options);
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));
  EXPECT_EQ(RoundTrip(client, *server, "after"), "re: after");
}

TEST(RepeatLimitedLogTest, FirstOfEachKeyThenOnePerIntervalWithTheCountLeftOut) {
  using internal::RepeatLimitedLog;
  RepeatLimitedLog log(std::chrono::seconds(10));
  const RepeatLimitedLog::Clock::time_point t0{};
  EXPECT_EQ(log.Admit("a", t0), 0);
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(log.Admit("a", t0 + std::chrono::seconds(i)));
  EXPECT_EQ(log.Admit("b", t0 + std::chrono::seconds(5)), 0);  // its own key
  EXPECT_EQ(log.Admit("a", t0 + std::chrono::seconds(10)), 5);
  EXPECT_FALSE(log.Admit("a", t0 + std::chrono::seconds(11)));
  EXPECT_EQ(log.Admit("a", t0 + std::chrono::seconds(30)), 1);
  // Keys beyond the bound push out the oldest instead of growing the map.
  for (std::size_t k = 0; k < RepeatLimitedLog::kMaxKeys + 10; ++k) {
    const std::string key = std::to_string(k);  // (GCC 12 warns on "k" + to_string)
    EXPECT_EQ(log.Admit(key, t0 + std::chrono::seconds(40)), 0);
  }
  EXPECT_EQ(log.Admit("a", t0 + std::chrono::seconds(41)), 0);  // forgotten: logged anew
}

// A rejected client that keeps retrying (here 40 handshakes with one
// unknown key) costs one warning line, not one per attempt; another key
// gets its own.
TEST_F(CurveTest, RepeatedDenialsOfOneKeyAreLoggedOnce) {
  // The sink goes in before the server's ZAP thread starts and comes out
  // after it has stopped (declared first, destroyed last): a logger's sink
  // list is not safe to change while another thread logs through it.
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  spdlog::default_logger()->sinks().push_back(sink);
  struct RemoveSink {
    ~RemoveSink() { spdlog::default_logger()->sinks().pop_back(); }
  } remove_sink;
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})));
  const std::string domain = server->domain->name();
  zmq::socket_t zap(ProcessContext(), zmq::socket_type::req);
  zap.set(zmq::sockopt::linger, 0);
  zap.connect("inproc://zeromq.zap.01");
  const auto deny = [&](char fill, int id) {
    const std::vector<std::string> request = {
        "1.0", std::to_string(id), domain, "127.0.0.1", "", "CURVE", std::string(32, fill)};
    std::vector<zmq::const_buffer> frames;
    for (const std::string& f : request) frames.push_back(zmq::buffer(f));
    ASSERT_TRUE(zmq::send_multipart(zap, frames));
    auto reply = Receive(zap);
    ASSERT_TRUE(reply);
    EXPECT_EQ((*reply)[2].to_string(), "400");
  };
  for (int i = 0; i < 40; ++i) deny('x', i);
  deny('y', 40);
  EXPECT_EQ(server->domain->denied(), 41u);
  int lines = 0;
  for (const std::string& line : sink->last_formatted()) {
    lines += line.find("is not authorized") != std::string::npos;
  }
  EXPECT_EQ(lines, 2);
}

// Requests sent straight to inproc://zeromq.zap.01, as libzmq would (RFC 27).
TEST_F(CurveTest, ZapHandlerAnswersMalformedRequestsWithoutCrashing) {
  auto server = StartServer(ServerOptions(AuthorizedDir("authorized", {"alice"})));
  const std::string domain = server->domain->name();
  zmq::socket_t zap(ProcessContext(), zmq::socket_type::req);
  zap.set(zmq::sockopt::linger, 0);
  zap.connect("inproc://zeromq.zap.01");

  std::array<std::uint8_t, 32> alice_binary;
  ASSERT_NE(zmq_z85_decode(alice_binary.data(), alice_.public_key.c_str()), nullptr);
  const std::string alice_key(reinterpret_cast<const char*>(alice_binary.data()), 32);
  // Returns the status code of the reply, after checking its shape.
  const auto ask = [&](const std::vector<std::string>& frames) -> std::string {
    std::vector<zmq::const_buffer> buffers;
    for (const auto& f : frames) buffers.push_back(zmq::buffer(f));
    if (!zmq::send_multipart(zap, buffers)) return "send failed";
    auto reply = Receive(zap);
    if (!reply) return "no reply";
    if (reply->size() != 6) return "bad reply";
    EXPECT_EQ((*reply)[0].to_string(), "1.0");
    if (frames.size() > 1) {
      EXPECT_EQ((*reply)[1].to_string(), frames[1]);
    }
    return (*reply)[2].to_string();
  };
  const std::string addr = "127.0.0.1";
  EXPECT_EQ(ask({"1.0"}), "500");
  EXPECT_EQ(ask({"2.0", "7", domain, addr, "", "CURVE", alice_key}), "500");
  EXPECT_EQ(ask({"1.0", "8", "no-such-domain", addr, "", "CURVE", alice_key}), "400");
  EXPECT_EQ(ask({"1.0", "9", domain, addr, "", "NULL"}), "400");
  EXPECT_EQ(ask({"1.0", "10", domain, addr, "", "CURVE", "short"}), "500");
  EXPECT_EQ(ask({"1.0", "11", domain, addr, "", "CURVE", alice_key, "extra"}), "500");
  EXPECT_EQ(ask({"1.0", "12", domain, addr, "", "CURVE", std::string(32, 'x')}), "400");
  EXPECT_EQ(ask({"1.0", "13", domain, addr, "", "CURVE", alice_key}), "200");
  EXPECT_EQ(server->domain->denied(), 4u);
  EXPECT_EQ(server->domain->admitted(), 1u);

  // Real clients still get through.
  zmq::socket_t client = Connect(server->endpoint, ClientOptions("alice"));
  EXPECT_EQ(RoundTrip(client, *server, "still here"), "re: still here");
}

}  // namespace
}  // namespace rlswarm::rpc
