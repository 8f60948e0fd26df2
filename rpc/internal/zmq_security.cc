// CURVE socket options and the process's ZAP handler (see zmq_security.h).
//
// Data path of one handshake: a client connects to a CURVE server socket ->
// libzmq (in its I/O thread) sends a ZAP request to inproc://zeromq.zap.01 ->
// ZapHandler's thread looks the domain up, checks the client key and replies
// 200 or 400 -> libzmq completes or fails the handshake. A denied client's
// messages never reach the server socket.

#include "rpc/internal/zmq_security.h"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <zmq_addon.hpp>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "rpc/internal/context.h"
#include "rpc/internal/repeat_limited_log.h"

// In zmq.h 4.3 this option is declared only with the DRAFT API, but libzmq
// >= 4.3.0 implements it in every build. Without it a CURVE server whose ZAP
// handler is missing admits every client (the "Stonehouse" legacy mode).
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

namespace rlswarm::rpc::internal {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr std::size_t kCurveKeyBytes = 32;

using BinaryKey = std::array<std::uint8_t, kCurveKeyBytes>;

// `z85` was validated by ReadKeyFile; a failure here is a broken invariant.
BinaryKey DecodeKey(const std::string& z85) {
  BinaryKey key;
  if (z85.size() != 40 || zmq_z85_decode(key.data(), z85.c_str()) == nullptr) {
    throw Internal("invalid Z85 CURVE key passed the key file checks");
  }
  return key;
}

std::string EncodeKey(const void* data) {
  std::array<char, 41> z85{};
  zmq_z85_encode(z85.data(), static_cast<const std::uint8_t*>(data), kCurveKeyBytes);
  return z85.data();
}

// One server socket's admission policy. Immutable except for the counters.
struct DomainState {
  std::string name;
  std::unordered_set<std::string> keys;  // Z85 client public keys
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> denied{0};
};

// The ZAP handler (RFC 27) of ProcessContext(): one thread owning a REP socket
// bound to inproc://zeromq.zap.01, running while at least one domain is
// registered. Thread safe.
//
// Lock order: lifecycle_mu_ before domains_mu_. Stop() joins the thread
// holding lifecycle_mu_ only; the thread takes domains_mu_ (briefly, per
// request), so the join cannot deadlock.
class ZapHandler {
 public:
  // Intentionally leaked, like ProcessContext(): rpc objects may be static
  // and release their domain during static destruction.
  static ZapHandler& Instance() {
    static ZapHandler* handler = new ZapHandler;
    return *handler;
  }

  // Registers a new uniquely named domain admitting `keys`, starting the
  // thread (and binding the ZAP endpoint) if it is the first. When this
  // returns, the handler answers requests for the domain. Throws Internal if
  // the ZAP endpoint is taken (another ZAP handler on this context).
  std::shared_ptr<DomainState> Register(const std::vector<std::string>& keys) {
    MutexLock lifecycle(lifecycle_mu_);
    auto state = std::make_shared<DomainState>();
    state->name = "rlswarm/" + std::to_string(next_domain_++);
    state->keys.insert(keys.begin(), keys.end());
    // A thread that died on an unexpected error is replaced here (meanwhile
    // handshakes failed closed).
    if (thread_.joinable() && !running_.load()) Stop();
    if (!thread_.joinable()) Start();
    MutexLock lock(domains_mu_);
    domains_.emplace(state->name, state);
    return state;
  }

  // Unregisters `name`; stops and joins the thread after the last one.
  void Release(const std::string& name) {
    MutexLock lifecycle(lifecycle_mu_);
    bool last;
    {
      MutexLock lock(domains_mu_);
      domains_.erase(name);
      last = domains_.empty();
    }
    if (last) Stop();
  }

 private:
  struct Reply {
    std::string status_code;
    std::string status_text;
    std::string user_id;
  };

  // Binds in the caller's thread so that a bind error surfaces as an
  // exception here and the endpoint exists before any server socket is
  // configured; the sockets then move to the new thread (thread creation is
  // the full memory barrier ZeroMQ asks for).
  void Start() RLSWARM_REQUIRES(lifecycle_mu_) {
    zmq::context_t& context = ProcessContext();
    zmq::socket_t zap(context, zmq::socket_type::rep);
    zap.set(zmq::sockopt::linger, 0);
    try {
      zap.bind(kZapEndpoint);
    } catch (const zmq::error_t& e) {
      throw Internal(std::string("cannot bind the ZAP handler to ") + kZapEndpoint + ": " +
                     e.what() + " (another ZAP handler on the rpc context?)");
    }
    // The stop signal: an inproc PAIR, so the handler can block in poll
    // without a timeout and still be woken.
    const std::string control = "inproc://rlswarm.zap.stop." + std::to_string(generation_++);
    zmq::socket_t stop_receiver(context, zmq::socket_type::pair);
    stop_receiver.set(zmq::sockopt::linger, 0);
    stop_receiver.bind(control);
    stop_sender_.emplace(context, zmq::socket_type::pair);
    stop_sender_->set(zmq::sockopt::linger, 0);
    stop_sender_->connect(control);
    running_.store(true);
    thread_ = std::thread([this, zap = std::move(zap), stop = std::move(stop_receiver)]() mutable {
      Run(zap, stop);
    });
  }

  void Stop() RLSWARM_REQUIRES(lifecycle_mu_) {
    if (!thread_.joinable()) return;
    try {
      // dontwait: if the thread already died the message just stays queued.
      (void)stop_sender_->send(zmq::str_buffer("stop"), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::error("ZAP handler: cannot send the stop signal: {}", e.what());
    }
    thread_.join();
    stop_sender_.reset();
  }

  void Run(zmq::socket_t& zap, zmq::socket_t& stop) {
    try {
      for (bool serving = true; serving;) {
        try {
          serving = ServeOne(zap, stop);
        } catch (const zmq::error_t& e) {
          if (e.num() != EINTR) throw;  // a signal interrupted poll: go on
        }
      }
    } catch (const std::exception& e) {
      // Never let an exception escape the thread. With the handler gone,
      // ZMQ_ZAP_ENFORCE_DOMAIN makes every CURVE handshake fail: closed.
      spdlog::error("ZAP handler stopped: {}; CURVE handshakes fail until restarted", e.what());
    }
    // Unbind explicitly: closing alone frees the inproc name asynchronously,
    // and the next Start() must be able to bind it again at once.
    try {
      zap.unbind(kZapEndpoint);
    } catch (const zmq::error_t& e) {
      spdlog::error("ZAP handler: cannot unbind {}: {}", kZapEndpoint, e.what());
    }
    running_.store(false);
  }

  // Waits (without deadline: Stop() wakes it) for a request or the stop
  // signal; answers the request. Returns false on the stop signal.
  bool ServeOne(zmq::socket_t& zap, zmq::socket_t& stop) {
    std::array<zmq::pollitem_t, 2> items{
        {{zap.handle(), 0, ZMQ_POLLIN, 0}, {stop.handle(), 0, ZMQ_POLLIN, 0}}};
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
    if (items[1].revents & ZMQ_POLLIN) return false;
    if (!(items[0].revents & ZMQ_POLLIN)) return true;
    std::vector<zmq::message_t> request;
    if (!zmq::recv_multipart(zap, std::back_inserter(request), zmq::recv_flags::dontwait)) {
      return true;
    }
    const Reply reply = Handle(request);
    const std::string request_id = request.size() > 1 ? request[1].to_string() : "";
    std::array<zmq::const_buffer, 6> frames{
        zmq::str_buffer("1.0"),         zmq::buffer(request_id),
        zmq::buffer(reply.status_code), zmq::buffer(reply.status_text),
        zmq::buffer(reply.user_id),     zmq::const_buffer()};  // no metadata
    (void)zmq::send_multipart(zap, frames);
    return true;
  }

  std::shared_ptr<DomainState> Find(const std::string& name) {
    MutexLock lock(domains_mu_);
    const auto it = domains_.find(name);
    return it == domains_.end() ? nullptr : it->second;
  }

  // One RFC 27 request: version, request id, domain, address, routing id,
  // mechanism, credentials... Malformed requests get 500 (the handshake
  // fails), unknown domains and keys 400.
  Reply Handle(const std::vector<zmq::message_t>& request) {
    if (request.size() < 6) {
      spdlog::error("ZAP handler: malformed request with {} frames", request.size());
      return {"500", "malformed ZAP request", ""};
    }
    if (request[0].to_string_view() != "1.0") {
      spdlog::error("ZAP handler: unsupported ZAP version '{}'", request[0].to_string());
      return {"500", "unsupported ZAP version", ""};
    }
    const std::string domain = request[2].to_string();
    const std::string address = request[3].to_string();
    const std::shared_ptr<DomainState> state = Find(domain);
    if (!state) {
      LogDenial(spdlog::level::warn, "domain|" + domain,
                fmt::format("ZAP handler: denied {}: unknown ZAP domain '{}'", address, domain));
      return {"400", "unknown ZAP domain", ""};
    }
    if (request[5].to_string_view() != "CURVE") {
      state->denied.fetch_add(1);
      LogDenial(spdlog::level::warn, "mechanism|" + domain + "|" + address,
                fmt::format("ZAP handler: denied {} in domain {}: mechanism {} (CURVE required)",
                            address, domain, request[5].to_string()));
      return {"400", "CURVE required", ""};
    }
    if (request.size() != 7 || request[6].size() != kCurveKeyBytes) {
      state->denied.fetch_add(1);
      LogDenial(spdlog::level::err, "malformed|" + domain + "|" + address,
                fmt::format("ZAP handler: malformed CURVE credentials from {} in domain {}",
                            address, domain));
      return {"500", "malformed CURVE credentials", ""};
    }
    const std::string client_key = EncodeKey(request[6].data());
    if (state->keys.count(client_key) == 0) {
      state->denied.fetch_add(1);
      LogDenial(spdlog::level::warn, "key|" + domain + "|" + client_key,
                fmt::format("ZAP handler: denied {} in domain {}: client key {} is not authorized",
                            address, domain, client_key));
      return {"400", "client key not authorized", ""};
    }
    state->admitted.fetch_add(1);
    spdlog::debug("ZAP handler: admitted {} in domain {} with key {}", address, domain, client_key);
    // The key becomes the messages' "User-Id" property: servers can tell
    // clients apart (zmq_msg_gets(msg, "User-Id")).
    return {"200", "OK", client_key};
  }

  // A rejected client retries its handshake every reconnect interval: one
  // line per (reason, domain, key or address) per kDenialLogInterval, with
  // the count of those left out, instead of one per attempt.
  void LogDenial(spdlog::level::level_enum level, const std::string& key,
                 const std::string& message) {
    const std::optional<std::int64_t> left_out =
        denial_log_.Admit(key, RepeatLimitedLog::Clock::now());
    if (!left_out) return;
    if (*left_out == 0) {
      spdlog::log(level, "{}", message);
    } else {
      spdlog::log(level, "{} ({} more like it since the last such line)", message, *left_out);
    }
  }

  static constexpr std::chrono::seconds kDenialLogInterval{10};
  RepeatLimitedLog denial_log_{kDenialLogInterval};  // the handler thread's alone

  Mutex lifecycle_mu_ RLSWARM_ACQUIRED_BEFORE(domains_mu_);
  std::thread thread_ RLSWARM_GUARDED_BY(lifecycle_mu_);
  std::optional<zmq::socket_t> stop_sender_ RLSWARM_GUARDED_BY(lifecycle_mu_);
  std::uint64_t next_domain_ RLSWARM_GUARDED_BY(lifecycle_mu_) = 0;
  std::uint64_t generation_ RLSWARM_GUARDED_BY(lifecycle_mu_) = 0;
  std::atomic<bool> running_{false};  // false once Run returned

  Mutex domains_mu_;
  std::unordered_map<std::string, std::shared_ptr<DomainState>> domains_
      RLSWARM_GUARDED_BY(domains_mu_);
};

class ZapDomainImpl : public ZapDomain {
 public:
  explicit ZapDomainImpl(std::shared_ptr<DomainState> state) : state_(std::move(state)) {}
  ~ZapDomainImpl() override { ZapHandler::Instance().Release(state_->name); }

  const std::string& name() const override { return state_->name; }
  std::uint64_t admitted() const override { return state_->admitted.load(); }
  std::uint64_t denied() const override { return state_->denied.load(); }

 private:
  std::shared_ptr<DomainState> state_;
};

void RequireField(const std::string& value, const char* field, const char* role) {
  if (value.empty()) {
    throw InvalidArgument(std::string("SecurityOptions.") + field + " is empty; a CURVE " + role +
                          " needs it");
  }
}

}  // namespace

std::unique_ptr<ZapDomain> ConfigureCurveServer(zmq::socket_t& socket,
                                                const SecurityOptions& options) {
  if (!options.curve) return nullptr;
  RequireField(options.server_secret_key_file, "server_secret_key_file", "server");
  RequireField(options.authorized_clients_dir, "authorized_clients_dir", "server");
  const KeyPair server = ReadKeyFile(options.server_secret_key_file);
  if (server.secret_key.empty()) {
    throw InvalidArgument(options.server_secret_key_file +
                          ": has no secret-key (a server needs its .key_secret file, not the "
                          "public .key)");
  }
  const std::vector<std::string> clients = ReadAuthorizedKeys(options.authorized_clients_dir);

  auto domain = std::make_unique<ZapDomainImpl>(ZapHandler::Instance().Register(clients));
  const BinaryKey secret = DecodeKey(server.secret_key);
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(secret));
  socket.set(zmq::sockopt::zap_domain, domain->name());
  const int enforce = 1;
  if (zmq_setsockopt(socket.handle(), ZMQ_ZAP_ENFORCE_DOMAIN, &enforce, sizeof enforce) != 0) {
    // Refuse to run a CURVE server that would admit everybody if the handler
    // went away.
    throw Internal(std::string("cannot set ZMQ_ZAP_ENFORCE_DOMAIN (libzmq older than 4.3?): ") +
                   zmq_strerror(zmq_errno()));
  }
  return domain;
}

void ConfigureCurveClient(zmq::socket_t& socket, const SecurityOptions& options) {
  if (!options.curve) return;
  RequireField(options.client_secret_key_file, "client_secret_key_file", "client");
  RequireField(options.server_public_key_file, "server_public_key_file", "client");
  const KeyPair client = ReadKeyFile(options.client_secret_key_file);
  if (client.secret_key.empty()) {
    throw InvalidArgument(options.client_secret_key_file +
                          ": has no secret-key (a client needs its .key_secret file, not the "
                          "public .key)");
  }
  const KeyPair server = ReadKeyFile(options.server_public_key_file);
  const BinaryKey server_public = DecodeKey(server.public_key);
  const BinaryKey client_public = DecodeKey(client.public_key);
  const BinaryKey client_secret = DecodeKey(client.secret_key);
  socket.set(zmq::sockopt::curve_serverkey, zmq::buffer(server_public));
  socket.set(zmq::sockopt::curve_publickey, zmq::buffer(client_public));
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(client_secret));
}

}  // namespace rlswarm::rpc::internal
