#include "learner/runtime/store_server.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "learner/runtime/net_address.h"
#include "rpc/server.h"

namespace rlswarm::learner {
namespace {

using Bytes = std::string;  // the stored values: byte strings

Payload Int64Payload(int64_t value) {
  return Payload::FromVector<int64_t>(DType::kInt64, {1}, std::vector<int64_t>{value});
}

Payload BoolPayload(bool value) {
  return Payload::FromVector<uint8_t>(DType::kBool, {1},
                                      std::vector<uint8_t>{static_cast<uint8_t>(value ? 1 : 0)});
}

void ExpectPayloads(const rpc::Request& request, std::size_t at_least, std::size_t at_most) {
  const std::size_t n = request.payloads.size();
  if (n < at_least || n > at_most) {
    throw InvalidArgument(request.method + ": " + std::to_string(n) + " payloads, expected " +
                          (at_least == at_most
                               ? std::to_string(at_least)
                               : std::to_string(at_least) + " to " + std::to_string(at_most)));
  }
}

// A blocked get (the value of keys[0]) or wait (nothing), answered when every
// key exists.
struct Waiter {
  std::vector<std::string> keys;
  bool wants_value = false;
  rpc::Responder responder;
};

}  // namespace

class StoreServer::Impl {
 public:
  explicit Impl(StoreServerOptions options) : options_(std::move(options)) {
    const std::string address = NumericAddressOf(options_.bind_address);
    const bool v6 = address.find(':') != std::string::npos;
    rpc::ServerOptions server;
    server.endpoint = "tcp://" + (v6 ? "[" + address + "]" : address) + ":" +
                      (options_.port == 0 ? std::string("*") : std::to_string(options_.port));
    server.num_workers = 1;  // every handler runs on the I/O thread
    server.max_message_bytes = static_cast<int64_t>(options_.max_value_bytes) + (1 << 20);
    server.security = options_.security;
    server.name = "learner-store";
    server_ = std::make_unique<rpc::Server>(server);
    const rpc::HandlerOptions on_io{.run_on_io_thread = true};
    Serve(store_method::kSet, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 2, 2);
      MutexLock lock(mu_);
      Put(r.payloads[0].ToString(), r.payloads[1].ToString());
      reply.Reply({});
    });
    Serve(store_method::kGet, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 1, 1);
      MutexLock lock(mu_);
      Block({r.payloads[0].ToString()}, /*wants_value=*/true, reply);
    });
    Serve(store_method::kWait, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 0, 1 << 16);
      std::vector<std::string> keys;
      for (const Payload& p : r.payloads) keys.push_back(p.ToString());
      MutexLock lock(mu_);
      Block(std::move(keys), /*wants_value=*/false, reply);
    });
    Serve(store_method::kAdd, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 2, 2);
      const std::string key = r.payloads[0].ToString();
      const auto operand = r.payloads[1].As<int64_t>();
      if (operand.size() != 1) throw InvalidArgument("store.add: the operand is not one int64");
      MutexLock lock(mu_);
      int64_t value = 0;
      if (auto it = values_.find(key); it != values_.end()) {
        const Bytes& held = it->second;
        const auto [end, ec] = std::from_chars(held.data(), held.data() + held.size(), value);
        if (ec != std::errc() || end != held.data() + held.size()) {
          throw InvalidArgument("store.add: key '" + key + "' holds a value that is not a number");
        }
      }
      value += operand[0];
      Put(key, std::to_string(value));
      reply.Reply({Int64Payload(value)});
    });
    Serve(store_method::kCompareSet, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 3, 3);
      const std::string key = r.payloads[0].ToString();
      const Bytes expected = r.payloads[1].ToString();
      Bytes desired = r.payloads[2].ToString();
      MutexLock lock(mu_);
      auto it = values_.find(key);
      if (it == values_.end()) {
        if (!expected.empty()) return reply.Reply({Payload::FromString(expected)});
        Put(key, desired);
        return reply.Reply({Payload::FromString(std::move(desired))});
      }
      if (it->second == expected) Put(key, desired);
      reply.Reply({Payload::FromString(it->second)});
    });
    Serve(store_method::kDelete, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 1, 1);
      MutexLock lock(mu_);
      reply.Reply({BoolPayload(values_.erase(r.payloads[0].ToString()) > 0)});
    });
    Serve(store_method::kCheck, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 0, 1 << 16);
      MutexLock lock(mu_);
      bool all = true;
      for (const Payload& p : r.payloads) all = all && values_.count(p.ToString()) > 0;
      reply.Reply({BoolPayload(all)});
    });
    Serve(store_method::kNumKeys, on_io, [this](rpc::Request& r, rpc::Responder& reply) {
      ExpectPayloads(r, 0, 0);
      MutexLock lock(mu_);
      reply.Reply({Int64Payload(static_cast<int64_t>(values_.size()))});
    });
    try {
      server_->Start();
    } catch (const std::exception& e) {
      throw Unavailable("learner store: cannot serve on " + server.endpoint + ": " + e.what());
    }
  }

  ~Impl() {
    server_->Stop();
    MutexLock lock(mu_);
    for (Waiter& w : waiters_) w.responder.Fail(StatusCode::kCancelled, "the store stopped");
    waiters_.clear();
  }

  std::string endpoint() const { return server_->endpoint(); }

  uint16_t port() const {
    const std::string e = endpoint();
    return static_cast<uint16_t>(std::stoi(e.substr(e.rfind(':') + 1)));
  }

  std::size_t num_keys() const {
    MutexLock lock(mu_);
    return values_.size();
  }

  std::size_t num_waiters() const {
    MutexLock lock(mu_);
    return waiters_.size();
  }

 private:
  using Body = std::function<void(rpc::Request&, rpc::Responder&)>;

  // Every request first drops the waiters whose callers gave up (their
  // deadline passed), so abandoned gets cannot pile up.
  void Serve(const char* method, rpc::HandlerOptions options, Body body) {
    server_->Register(
        method,
        [this, body = std::move(body)](rpc::Request request, rpc::Responder responder) {
          {
            MutexLock lock(mu_);
            DropExpiredWaiters();
          }
          body(request, responder);
        },
        options);
  }

  void Put(const std::string& key, Bytes value) RLSWARM_REQUIRES(mu_) {
    if (key.empty()) throw InvalidArgument("store: empty key");
    if (value.size() > options_.max_value_bytes) {
      throw ResourceExhausted("store: value of '" + key + "' has " + std::to_string(value.size()) +
                              " bytes, more than max_value_bytes " +
                              std::to_string(options_.max_value_bytes));
    }
    auto it = values_.find(key);
    if (it == values_.end()) {
      if (values_.size() >= options_.max_keys) {
        throw ResourceExhausted("store: holds max_keys " + std::to_string(options_.max_keys) +
                                " keys; '" + key + "' not added");
      }
      values_.emplace(key, std::move(value));
    } else {
      it->second = std::move(value);
    }
    AnswerWaiters();
  }

  void Block(std::vector<std::string> keys, bool wants_value, rpc::Responder& reply)
      RLSWARM_REQUIRES(mu_) {
    Waiter w{std::move(keys), wants_value, reply};
    if (TryAnswer(w)) return;
    if (waiters_.size() >= options_.max_waiters) {
      throw ResourceExhausted("store: " + std::to_string(waiters_.size()) +
                              " blocked gets and waits already (max_waiters)");
    }
    waiters_.push_back(std::move(w));
  }

  bool TryAnswer(Waiter& w) RLSWARM_REQUIRES(mu_) {
    for (const std::string& key : w.keys) {
      if (values_.count(key) == 0) return false;
    }
    if (w.wants_value) {
      w.responder.Reply({Payload::FromString(values_.at(w.keys[0]))});
    } else {
      w.responder.Reply({});
    }
    return true;
  }

  void AnswerWaiters() RLSWARM_REQUIRES(mu_) {
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [this](Waiter& w) RLSWARM_REQUIRES(mu_) { return TryAnswer(w); }),
                   waiters_.end());
  }

  void DropExpiredWaiters() RLSWARM_REQUIRES(mu_) {
    const auto now = std::chrono::steady_clock::now();
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [now](Waiter& w) {
                                    if (w.responder.deadline() >= now) return false;
                                    w.responder.Fail(StatusCode::kDeadlineExceeded,
                                                     "store: the keys did not appear in time");
                                    return true;
                                  }),
                   waiters_.end());
  }

  const StoreServerOptions options_;
  std::unique_ptr<rpc::Server> server_;
  mutable Mutex mu_;
  std::map<std::string, Bytes> values_ RLSWARM_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ RLSWARM_GUARDED_BY(mu_);
};

StoreServer::StoreServer(StoreServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
StoreServer::~StoreServer() = default;
uint16_t StoreServer::port() const { return impl_->port(); }
std::string StoreServer::endpoint() const { return impl_->endpoint(); }
std::size_t StoreServer::num_keys() const { return impl_->num_keys(); }
std::size_t StoreServer::num_waiters() const { return impl_->num_waiters(); }

}  // namespace rlswarm::learner
