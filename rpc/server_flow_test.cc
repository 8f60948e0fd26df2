// Server: what happens when a client stops reading (the send high-water mark
// to that peer), and handlers that run on the I/O thread
// (HandlerOptions::run_on_io_thread). Real sockets on tcp://127.0.0.1:*.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <mutex>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "rpc/client.h"
#include "rpc/server.h"
#include "rpc/testing/fixtures.h"
#include "rpc/testing/wait.h"

namespace rlswarm::rpc {
namespace {

using namespace std::chrono_literals;
using testing::ClientFor;
using testing::Get;
using testing::LocalServerOptions;
using testing::WaitUntil;

std::string RequestHeader(std::uint64_t id, const std::string& method) {
  Header header;
  header.method = method;
  header.request_id = id;
  header.timeout_ms = 60000;
  return EncodeHeader(header);
}

// A peer that sends requests and never reads: its replies pile up in the
// kernel's socket buffers, then in the server's pipe to it, until the
// server's send high-water mark is reached. Each further reply must be
// dropped and counted (EAGAIN), and the I/O thread must keep serving others.
TEST(ServerFlowTest, ReplyToAClientThatStopsReadingIsDroppedAtTheHighWaterMark) {
  constexpr std::size_t kReplyBytes = 1 << 20;
  constexpr int kRequests = 200;  // 200 MiB of replies: far more than any buffer
  // One buffer shared by every reply (frames are zero-copy views of it).
  const Payload big = Payload::FromVector(DType::kUInt8, {static_cast<std::int64_t>(kReplyBytes)},
                                          std::vector<std::uint8_t>(kReplyBytes, 7));
  ServerOptions options = LocalServerOptions();
  options.send_high_water_mark = 2;
  std::atomic<int> answered{0};
  Server server(options);
  server.Register("big", [&](Request, Responder responder) {
    responder.Reply({big});
    answered.fetch_add(1);
  });
  server.Register(
      "echo",
      [](Request request, Responder responder) { responder.Reply(std::move(request.payloads)); },
      HandlerOptions{.run_on_io_thread = true});
  server.Start();

  zmq::context_t context(1);
  zmq::socket_t slow(context, zmq::socket_type::dealer);
  slow.set(zmq::sockopt::linger, 0);
  slow.set(zmq::sockopt::rcvhwm, 1);          // ZeroMQ buffers at most one reply here
  slow.set(zmq::sockopt::rcvbuf, 64 * 1024);  // and the kernel little more
  slow.connect(server.endpoint());
  for (int i = 0; i < kRequests; ++i) {
    const std::string header = RequestHeader(static_cast<std::uint64_t>(i + 1), "big");
    ASSERT_TRUE(slow.send(zmq::buffer(header), zmq::send_flags::none));
  }

  ASSERT_TRUE(WaitUntil([&] { return answered.load() == kRequests; }, 20s));
  // Every reply is either sent or dropped once the I/O thread has taken it
  // from its queue; none waits for the slow peer.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const ServerStats s = server.stats();
        return s.replies + s.replies_dropped == static_cast<std::uint64_t>(kRequests);
      },
      10s))
      << "sent " << server.stats().replies << ", dropped " << server.stats().replies_dropped;
  const ServerStats stats = server.stats();
  // The peer is connected, so these drops are EAGAIN (high-water mark), not
  // EHOSTUNREACH.
  EXPECT_GE(stats.replies_dropped, 1u);
  EXPECT_LT(stats.replies, static_cast<std::uint64_t>(kRequests));

  // The I/O thread did not block on the slow peer: another client is served.
  Client client(ClientFor(server));
  auto future = client.Call("echo", {Payload::FromString("not stuck")});
  EXPECT_EQ(Get(future).payloads.at(0).ToString(), "not stuck");
}

TEST(ServerFlowTest, IoThreadHandlerRepliesAtOnceOrLaterAndErrorsAsWorkersDo) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 1;
  std::mutex mutex;
  std::vector<Responder> held;
  std::atomic<std::thread::id> io_thread_id{};
  Server server(options);
  const HandlerOptions on_io{.run_on_io_thread = true};
  server.Register(
      "echo",
      [&](Request request, Responder responder) {
        io_thread_id.store(std::this_thread::get_id());
        responder.Reply(std::move(request.payloads));
      },
      on_io);
  server.Register(
      "hold",
      [&](Request, Responder responder) {
        std::lock_guard lock(mutex);
        held.push_back(std::move(responder));
      },
      on_io);
  server.Register(
      "throw", [](Request, Responder) { throw NotFound("no such row"); }, on_io);
  server.Register(
      "silent", [](Request, Responder) {}, on_io);
  server.Start();
  Client client(ClientFor(server));

  auto deferred = client.Call("hold", {});
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard lock(mutex);
        return held.size() == 1;
      },
      10s));
  // A held Responder does not hold up the I/O thread: others are served.
  for (int i = 0; i < 100; ++i) {
    auto future = client.Call("echo", {Payload::FromString(std::to_string(i))});
    EXPECT_EQ(Get(future).payloads.at(0).ToString(), std::to_string(i));
  }
  EXPECT_NE(io_thread_id.load(), std::this_thread::get_id());
  auto thrown = client.Call("throw", {});
  EXPECT_THROW(Get(thrown), NotFound);
  auto silent = client.Call("silent", {});
  EXPECT_THROW(Get(silent), Internal);

  std::thread replier([&] {
    std::lock_guard lock(mutex);
    held[0].Reply({Payload::FromString("later")});
  });
  replier.join();
  EXPECT_EQ(Get(deferred).payloads.at(0).ToString(), "later");
  EXPECT_EQ(server.stats().rejected_queue_full, 0u);
}

// Many clients, many calls in flight, replies made on the I/O thread and on
// other threads at once: every call gets its own reply.
TEST(ServerFlowTest, IoThreadAndWorkerHandlersMixUnderLoad) {
  Server server(LocalServerOptions());
  const auto echo = [](Request request, Responder responder) {
    responder.Reply(std::move(request.payloads));
  };
  server.Register("inline", echo, HandlerOptions{.run_on_io_thread = true});
  server.Register("worker", echo);
  server.Start();
  constexpr int kClients = 4;
  constexpr int kCalls = 200;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Client client(ClientFor(server));
      std::vector<std::future<Reply>> futures;
      for (int i = 0; i < kCalls; ++i) {
        const std::string text = std::to_string(c) + "/" + std::to_string(i);
        futures.push_back(
            client.Call(i % 2 == 0 ? "inline" : "worker", {Payload::FromString(text)}));
      }
      for (int i = 0; i < kCalls; ++i) {
        const std::string text = std::to_string(c) + "/" + std::to_string(i);
        if (Get(futures[static_cast<std::size_t>(i)]).payloads.at(0).ToString() == text) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kCalls);
}

}  // namespace
}  // namespace rlswarm::rpc
