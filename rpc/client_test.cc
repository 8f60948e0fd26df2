// Client: many calls in flight, deadlines, Close, and the Lazy Pirate
// failure handling of client.h against a server in a child process that is
// killed, restarted or SIGSTOPped.

#include "rpc/client.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/testing/child_process.h"
#include "rpc/server.h"
#include "rpc/testing/fixtures.h"
#include "rpc/testing/wait.h"

#ifndef RLSWARM_RPC_TEST_SERVER
#error "RLSWARM_RPC_TEST_SERVER must name the rpc_test_server binary"
#endif

namespace rlswarm::rpc {
namespace {

using namespace std::chrono_literals;
using rlswarm::testing::ChildProcess;
using rlswarm::testing::ChildProcessOptions;
using testing::ClientFor;
using testing::Get;
using testing::LocalServerOptions;
using testing::WaitUntil;

// Short heartbeats, for the tests that kill or stop the server.
ClientOptions FastFailureClient(const std::string& endpoint) {
  ClientOptions options = ClientFor(endpoint);
  options.heartbeat_interval = 50ms;
  options.heartbeat_timeout = 250ms;
  options.reconnect_backoff = 20ms;
  options.reconnect_backoff_max = 200ms;
  return options;
}

void Echo(Request request, Responder responder) { responder.Reply(std::move(request.payloads)); }

template <class E>
std::string ErrorOf(std::future<Reply>& future, std::chrono::milliseconds wait = 20s) {
  if (future.wait_for(wait) != std::future_status::ready) return "<no reply>";
  try {
    future.get();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception> ") + e.what();
  }
  return "<no error>";
}

// A started server with "echo" (on `workers` worker threads, 2 by default).
std::unique_ptr<Server> StartEchoServer(int workers = 2) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = workers;
  auto server = std::make_unique<Server>(options);
  server->Register("echo", Echo);
  server->Start();
  return server;
}

// A server that holds "hold" requests until the test answers them.
class HoldingServer {
 public:
  HoldingServer() : server_(LocalServerOptions()) {
    server_.Register("echo", Echo);
    server_.Register("hold", [this](Request, Responder responder) {
      std::lock_guard lock(mutex_);
      held_.push_back(responder);
    });
    server_.Start();
  }
  std::string endpoint() const { return server_.endpoint(); }
  bool WaitHeld(std::size_t n) {
    return WaitUntil(
        [&] {
          std::lock_guard lock(mutex_);
          return held_.size() >= n;
        },
        10s);
  }
  Responder held(std::size_t i) {
    std::lock_guard lock(mutex_);
    return held_.at(i);
  }

 private:
  std::mutex mutex_;
  std::vector<Responder> held_;  // guarded by mutex_
  Server server_;                // last: stops before what its handlers use
};

TEST(ClientTest, ManyClientsWithManyCallsInFlightGetTheirOwnReplies) {
  const auto server_owner = StartEchoServer();
  Server& server = *server_owner;

  constexpr int kClients = 8;
  constexpr int kCalls = 200;
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Client client(ClientFor(server.endpoint()));
      std::vector<std::future<Reply>> futures;
      for (int i = 0; i < kCalls; ++i) {
        const std::int64_t tag = c * 100000 + i;
        futures.push_back(client.Call(
            "echo",
            {Payload::FromVector(DType::kInt64, {2}, std::vector<std::int64_t>{tag, -tag})}));
      }
      for (int i = 0; i < kCalls; ++i) {
        const std::int64_t tag = c * 100000 + i;
        const Reply reply = Get(futures[i]);
        const auto values = reply.payloads.at(0).As<std::int64_t>();
        if (values.size() == 2 && values[0] == tag && values[1] == -tag) correct++;
      }
      EXPECT_EQ(client.stats().calls, static_cast<std::uint64_t>(kCalls));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(correct.load(), kClients * kCalls);
  EXPECT_EQ(server.stats().replies, static_cast<std::uint64_t>(kClients * kCalls));
}

TEST(ClientTest, InvokeDrivesAnIdleClientsSocketFromTheCallingThread) {
  const auto server = StartEchoServer();
  Client client(ClientFor(server->endpoint()));
  client.Call("echo", {}).get();  // connected
  for (std::int64_t i = 0; i < 200; ++i) {
    const Reply reply = client.Invoke(
        "echo", {Payload::FromVector(DType::kInt64, {1}, std::vector<std::int64_t>{i})});
    ASSERT_EQ(reply.payloads.at(0).As<std::int64_t>()[0], i);
  }
  // Most went direct (an I/O thread still finishing its round after the
  // previous call makes one fall back, which is fine; on a loaded machine
  // that thread is descheduled more often, so the bound leaves room: 148 of
  // 200 were seen at a load average of 10 on 2 cores).
  EXPECT_GE(client.stats().direct_calls, 100u);
  EXPECT_EQ(client.stats().calls, 201u);
}

TEST(ClientTest, InvokeMixedWithCallsFromOtherThreadsGetsEveryReplyRight) {
  const auto server_owner = StartEchoServer();
  Server& server = *server_owner;
  Client client(ClientFor(server.endpoint()));
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        const std::int64_t tag = t * 100000 + i;
        auto payloads = [tag] {
          return std::vector<Payload>{
              Payload::FromVector(DType::kInt64, {1}, std::vector<std::int64_t>{tag})};
        };
        Reply reply;
        if (t % 2 == 0) {
          reply = client.Invoke("echo", payloads());
        } else {
          auto future = client.Call("echo", payloads());
          reply = Get(future);
        }
        if (reply.payloads.at(0).As<std::int64_t>()[0] == tag) correct++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(correct.load(), 600);
}

TEST(ClientTest, InvokeKeepsDeadlinesAndLateRepliesAndFailsWhenClosed) {
  HoldingServer server;
  Client client(ClientFor(server.endpoint()));
  client.Call("echo", {}).get();
  CallOptions options;
  options.timeout = 150ms;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(client.Invoke("hold", {}, options), DeadlineExceeded);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 3s);
  EXPECT_EQ(client.Invoke("echo", {Payload::FromString("after")}).payloads.at(0).ToString(),
            "after");
  ASSERT_TRUE(server.WaitHeld(1));
  server.held(0).Reply({Payload::FromString("too late")});
  EXPECT_TRUE(WaitUntil([&] { return client.stats().late_replies == 1; }, 10s));
  client.Close();
  EXPECT_THROW(client.Invoke("echo", {}), Cancelled);
}

TEST(ClientTest, DeadlineExceededComesQuicklyAndTheClientStillWorks) {
  HoldingServer server;
  Client client(ClientFor(server.endpoint()));
  CallOptions options;
  options.timeout = 150ms;
  const auto start = std::chrono::steady_clock::now();
  auto late = client.Call("hold", {}, options);
  EXPECT_NE(ErrorOf<DeadlineExceeded>(late).find("deadline"), std::string::npos);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 3s);
  EXPECT_EQ(client.stats().deadline_exceeded, 1u);

  auto ok = client.Call("echo", {Payload::FromString("after")});
  EXPECT_EQ(Get(ok).payloads.at(0).ToString(), "after");

  // The reply that comes after the deadline is counted and discarded.
  ASSERT_TRUE(server.WaitHeld(1));
  server.held(0).Reply({Payload::FromString("too late")});
  EXPECT_TRUE(WaitUntil([&] { return client.stats().late_replies == 1; }, 10s));
}

TEST(ClientTest, CallAsyncRunsTheCallbackOnceWithReplyOrError) {
  Server server(LocalServerOptions());
  server.Register("echo", Echo);
  server.Start();
  Client client(ClientFor(server.endpoint()));
  std::promise<std::string> ok;
  client.CallAsync("echo", {Payload::FromString("async")}, {},
                   [&](Reply* reply, std::exception_ptr error) {
                     ok.set_value(reply && !error ? reply->payloads.at(0).ToString() : "error");
                   });
  std::promise<bool> not_found;
  client.CallAsync("missing", {}, {}, [&](Reply* reply, std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
      not_found.set_value(false);
    } catch (const NotFound&) {
      not_found.set_value(reply == nullptr);
    }
  });
  EXPECT_EQ(ok.get_future().get(), "async");
  EXPECT_TRUE(not_found.get_future().get());
}

// A completion that starts the next call (a pipeline, as the replay writer
// streams) goes out from the I/O thread without a wake-up; every chain's
// calls complete in order with their own replies.
TEST(ClientTest, CallAsyncFromACompletionPipelinesOnTheIoThread) {
  Server server(LocalServerOptions());
  server.Register("echo", Echo, HandlerOptions{.run_on_io_thread = true});
  server.Start();
  Client client(ClientFor(server.endpoint()));
  constexpr int kChains = 8;
  constexpr int kSteps = 50;
  std::mutex mutex;
  std::condition_variable done_cv;
  std::vector<std::vector<std::string>> seen(kChains);  // guarded by mutex
  int chains_done = 0;                                  // guarded by mutex
  std::atomic<int> errors{0};
  std::function<void(int, int)> start = [&](int chain, int step) {
    const std::string text = std::to_string(chain) + "." + std::to_string(step);
    client.CallAsync("echo", {Payload::FromString(text)}, {},
                     [&, chain, step](Reply* reply, std::exception_ptr error) {
                       if (error) ++errors;
                       std::lock_guard lock(mutex);
                       if (reply != nullptr)
                         seen[chain].push_back(reply->payloads.at(0).ToString());
                       if (!error && step + 1 < kSteps) {
                         start(chain, step + 1);
                         return;
                       }
                       ++chains_done;
                       done_cv.notify_all();
                     });
  };
  for (int chain = 0; chain < kChains; ++chain) start(chain, 0);
  std::unique_lock lock(mutex);
  ASSERT_TRUE(done_cv.wait_for(lock, 20s, [&] { return chains_done == kChains; }));
  EXPECT_EQ(errors.load(), 0);
  for (int chain = 0; chain < kChains; ++chain) {
    ASSERT_EQ(seen[chain].size(), static_cast<std::size_t>(kSteps));
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_EQ(seen[chain][step], std::to_string(chain) + "." + std::to_string(step));
    }
  }
  EXPECT_EQ(client.stats().pipelined_calls, static_cast<std::uint64_t>(kChains * (kSteps - 1)));
  EXPECT_EQ(client.stats().calls, static_cast<std::uint64_t>(kChains * kSteps));
}

// A completion that starts another call while the client closes gets
// Cancelled for it too, at once, instead of leaving it pending forever.
TEST(ClientTest, CallAsyncFromACompletionDuringCloseIsCancelled) {
  HoldingServer server;
  Client client(ClientFor(server.endpoint()));
  std::promise<std::string> second;
  client.CallAsync("hold", {}, {}, [&](Reply*, std::exception_ptr error) {
    if (!error) {
      second.set_value("<first call got a reply>");
      return;
    }
    client.CallAsync("echo", {}, {}, [&](Reply*, std::exception_ptr again) {
      try {
        if (again) std::rethrow_exception(again);
        second.set_value("<no error>");
      } catch (const Cancelled& e) {
        second.set_value(e.what());
      } catch (const std::exception& e) {
        second.set_value(std::string("<other exception> ") + e.what());
      }
    });
  });
  ASSERT_TRUE(server.WaitHeld(1));
  client.Close();
  auto future = second.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_NE(future.get().find("closed"), std::string::npos);
}

TEST(ClientTest, CloseFailsPendingCallsWithCancelledAndIsIdempotent) {
  HoldingServer server;
  Client client(ClientFor(server.endpoint()));
  auto first = client.Call("hold", {});
  auto second = client.Call("hold", {});
  ASSERT_TRUE(server.WaitHeld(2));
  const auto start = std::chrono::steady_clock::now();
  client.Close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_NE(ErrorOf<Cancelled>(first, 0ms), "<no reply>");
  EXPECT_NE(ErrorOf<Cancelled>(second, 0ms), "<no reply>");
  client.Close();
  auto after = client.Call("echo", {});
  EXPECT_NE(ErrorOf<Cancelled>(after, 0ms), "<no reply>");
}

TEST(ClientTest, NoServerListeningGivesDeadlineExceeded) {
  std::string endpoint;
  {
    Server server(LocalServerOptions());
    server.Start();
    endpoint = server.endpoint();  // a port that is free again below
  }
  Client client(FastFailureClient(endpoint));
  CallOptions options;
  options.timeout = 200ms;
  auto future = client.Call("echo", {}, options);
  EXPECT_NE(ErrorOf<DeadlineExceeded>(future), "<no reply>");
}

TEST(ClientTest, InvalidOptionsThrowInvalidArgument) {
  ClientOptions options = ClientFor("");
  EXPECT_THROW(Client{options}, InvalidArgument);
  options = ClientFor("tcp://127.0.0.1:1");
  options.max_attempts = 0;
  EXPECT_THROW(Client{options}, InvalidArgument);
  options = ClientFor("no-transport");
  EXPECT_THROW(Client{options}, InvalidArgument);
}

// The rpc_test_server child (stdout in a pipe, stderr this test's); its
// endpoint is read from its first line.
struct ChildServer {
  explicit ChildServer(const std::vector<std::string>& args)
      : process(
            [&] {
              std::vector<std::string> argv = {RLSWARM_RPC_TEST_SERVER, "--heartbeat-ms", "50",
                                               "--heartbeat-timeout-ms", "250"};
              argv.insert(argv.end(), args.begin(), args.end());
              return argv;
            }(),
            [] {
              ChildProcessOptions o;
              o.out = ChildProcessOptions::Sink::kCapture;
              return o;
            }()) {
    const std::optional<std::string> line = process.ReadLine(20s);
    if (!line || line->rfind("endpoint ", 0) != 0) {
      throw std::runtime_error("rpc_test_server did not start: " + line.value_or("<nothing>"));
    }
    endpoint = line->substr(9);
  }
  bool WaitHeld(int n) {
    for (int i = 0; i < n; ++i) {
      const std::optional<std::string> line = process.ReadLine(10s);
      if (!line || line->rfind("held ", 0) != 0) return false;
    }
    return true;
  }

  ChildProcess process;
  std::string endpoint;
};

TEST(ClientTest, KilledServerRestartedOnTheSamePortRetriesOnlyIdempotentCalls) {
  auto server = std::make_unique<ChildServer>(std::vector<std::string>{"--hold"});
  const std::string endpoint = server->endpoint;
  Client client(FastFailureClient(endpoint));
  CallOptions idempotent;
  idempotent.idempotent = true;
  idempotent.timeout = 20s;
  CallOptions once;
  once.timeout = 20s;
  auto retried = client.Call("hold_or_echo", {Payload::FromString("again")}, idempotent);
  auto lost = client.Call("hold_or_echo", {Payload::FromString("once")}, once);
  ASSERT_TRUE(server->WaitHeld(2));  // both are in flight on the server

  server->process.Kill();
  const std::string message = ErrorOf<Unavailable>(lost, 5s);
  EXPECT_NE(message.find("not idempotent"), std::string::npos) << message;
  EXPECT_EQ(retried.wait_for(0s), std::future_status::timeout);

  // Same port, no --hold: the resent idempotent call is answered.
  server = std::make_unique<ChildServer>(std::vector<std::string>{"--endpoint", endpoint});
  EXPECT_EQ(server->endpoint, endpoint);
  EXPECT_EQ(Get(retried).payloads.at(0).ToString(), "again");
  EXPECT_GE(client.stats().retries, 1u);
  EXPECT_GE(client.stats().reconnects, 1u);

  auto fresh = client.Call("echo", {Payload::FromString("new")});
  EXPECT_EQ(Get(fresh).payloads.at(0).ToString(), "new");
}

// Contract: a hung server (SIGSTOP) is detected by the ZMTP heartbeats
// within about heartbeat_interval + heartbeat_timeout. A non-idempotent call
// in flight then fails with Unavailable; an idempotent one is resent, cannot
// complete (new connections to a stopped process never finish the
// handshake), and fails with DeadlineExceeded at its own deadline.
TEST(ClientTest, StoppedServerFailsInFlightCallsWithinTheHeartbeatTimeout) {
  ChildServer server({"--hold"});
  Client client(FastFailureClient(server.endpoint));
  CallOptions once;
  once.timeout = 20s;
  CallOptions idempotent;
  idempotent.idempotent = true;
  idempotent.timeout = 1500ms;
  auto lost = client.Call("hold_or_echo", {}, once);
  auto retried = client.Call("hold_or_echo", {}, idempotent);
  ASSERT_TRUE(server.WaitHeld(2));

  server.process.Signal(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = ErrorOf<Unavailable>(lost, 10s);
  const auto detected = std::chrono::steady_clock::now() - start;
  EXPECT_NE(message.find("lost"), std::string::npos) << message;
  std::printf("[ info ] SIGSTOP detected after %lld ms (heartbeat 50 ms / timeout 250 ms)\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(detected).count()));
  EXPECT_LT(detected, 2s);  // not the 20 s call deadline
  EXPECT_NE(ErrorOf<DeadlineExceeded>(retried, 10s), "<no reply>");

  server.process.Signal(SIGCONT);
  server.process.Kill();
}

}  // namespace
}  // namespace rlswarm::rpc
