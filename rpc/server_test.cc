// Server: request handling and every failure case of server.h, over real
// sockets (tcp://127.0.0.1:* with the bound port read back).

#include "rpc/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "rpc/client.h"
#include "rpc/testing/fixtures.h"
#include "rpc/testing/wait.h"

namespace rlswarm::rpc {
namespace {

using namespace std::chrono_literals;
using testing::ClientFor;
using testing::Get;
using testing::LocalServerOptions;
using testing::WaitUntil;

void Echo(Request request, Responder responder) { responder.Reply(std::move(request.payloads)); }

// The exception a call failed with, as its type and message.
template <class E>
std::string ErrorOf(std::future<Reply>& future) {
  if (future.wait_for(20s) != std::future_status::ready) return "<no reply>";
  try {
    future.get();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception> ") + e.what();
  }
  return "<no error>";
}

bool SameBytes(const Payload& a, const Payload& b) {
  return a.bytes().size() == b.bytes().size() &&
         (a.bytes().empty() ||
          std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0);
}

// A gate that handlers wait on until the test opens it (bounded, so a test
// failure cannot hang the worker).
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mutex_);
    entered_++;
    cv_.notify_all();
    cv_.wait_for(lock, 20s, [&] { return open_; });
  }
  bool WaitEntered(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 10s, [&] { return entered_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
};

TEST(ServerTest, EchoKeepsDtypeShapeAndBytesOfEveryPayload) {
  Server server(LocalServerOptions());
  server.Register("echo", Echo);
  server.Start();
  Client client(ClientFor(server));

  std::vector<float> big(256 * 1024);  // 1 MiB: sent zero-copy
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
  std::vector<Payload> sent = {
      Payload::FromVector(DType::kFloat32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}),
      Payload::FromVector(DType::kInt64, {5}, std::vector<std::int64_t>{-1, 0, 1, 1LL << 40, 7}),
      Payload::FromVector(DType::kUInt8, {0}, std::vector<std::uint8_t>{}),
      Payload::FromVector(DType::kBool, {3}, std::vector<std::uint8_t>{1, 0, 1}),
      Payload::FromVector(DType::kFloat64, {}, std::vector<double>{3.25}),
      Payload::FromVector(DType::kInt32, {2, 2, 2},
                          std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8}),
      Payload::FromVector(DType::kFloat32, {512, 512}, std::move(big)),
      Payload::FromString("hello"),
  };
  auto future = client.Call("echo", sent);
  const Reply reply = Get(future);
  ASSERT_EQ(reply.payloads.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(reply.payloads[i].dtype(), sent[i].dtype()) << i;
    EXPECT_EQ(reply.payloads[i].shape(), sent[i].shape()) << i;
    EXPECT_TRUE(SameBytes(reply.payloads[i], sent[i])) << i;
  }
  EXPECT_EQ(reply.payloads[6].As<float>()[1000], 500.0f);
  EXPECT_EQ(reply.payloads[7].ToString(), "hello");
  EXPECT_GE(server.stats().replies, 1u);
}

TEST(ServerTest, EndpointHasTheRealPortAndABusyPortFailsWithUnavailable) {
  Server server(LocalServerOptions());
  EXPECT_EQ(server.endpoint(), "");
  server.Start();
  const std::string endpoint = server.endpoint();
  EXPECT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  EXPECT_EQ(endpoint.find('*'), std::string::npos) << endpoint;

  ServerOptions same = LocalServerOptions();
  same.endpoint = endpoint;
  Server second(same);
  EXPECT_THROW(second.Start(), Unavailable);
}

TEST(ServerTest, RegisterRejectsDuplicatesEmptyNamesAndCallsAfterStart) {
  Server server(LocalServerOptions());
  server.Register("echo", Echo);
  EXPECT_THROW(server.Register("echo", Echo), InvalidArgument);
  EXPECT_THROW(server.Register("", Echo), InvalidArgument);
  EXPECT_THROW(server.Register("empty", Handler()), InvalidArgument);
  server.Start();
  EXPECT_THROW(server.Register("late", Echo), FailedPrecondition);
  EXPECT_THROW(server.Start(), FailedPrecondition);
}

TEST(ServerTest, InvalidOptionsThrowInvalidArgument) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 0;
  EXPECT_THROW(Server{options}, InvalidArgument);
  options = LocalServerOptions();
  options.max_queued_requests = 0;
  EXPECT_THROW(Server{options}, InvalidArgument);
  options = LocalServerOptions();
  options.endpoint = "";
  EXPECT_THROW(Server{options}, InvalidArgument);
}

TEST(ServerTest, InprocClientReachesInprocServer) {
  ServerOptions options = LocalServerOptions();
  options.endpoint = "inproc://rpc-server-test-inproc";
  Server server(options);
  server.Register("echo", Echo);
  server.Start();
  EXPECT_EQ(server.endpoint(), options.endpoint);
  Client client(ClientFor(server));
  auto future = client.Call("echo", {Payload::FromString("in process")});
  EXPECT_EQ(Get(future).payloads.at(0).ToString(), "in process");
}

TEST(ServerTest, HandlerExceptionsReachTheClientAsTheSameTypeWithTheMessage) {
  Server server(LocalServerOptions());
  server.Register("invalid", [](Request, Responder) { throw InvalidArgument("bad action 7"); });
  server.Register("exhausted", [](Request, Responder) { throw ResourceExhausted("table full"); });
  server.Register("runtime", [](Request, Responder) { throw std::runtime_error("boom"); });
  server.Register("fail", [](Request, Responder r) { r.Fail(StatusCode::kDataLoss, "torn"); });
  server.Start();
  Client client(ClientFor(server));

  auto invalid = client.Call("invalid", {});
  auto exhausted = client.Call("exhausted", {});
  auto runtime = client.Call("runtime", {});
  auto fail = client.Call("fail", {});
  EXPECT_EQ(ErrorOf<InvalidArgument>(invalid), "bad action 7");
  EXPECT_EQ(ErrorOf<ResourceExhausted>(exhausted), "table full");
  EXPECT_EQ(ErrorOf<Internal>(runtime), "boom");
  EXPECT_EQ(ErrorOf<DataLoss>(fail), "torn");
}

TEST(ServerTest, ResponderDroppedWithoutReplyGivesInternal) {
  Server server(LocalServerOptions());
  server.Register("forget", [](Request, Responder) {});
  server.Start();
  Client client(ClientFor(server));
  auto future = client.Call("forget", {});
  EXPECT_NE(ErrorOf<Internal>(future).find("did not reply"), std::string::npos);
}

TEST(ServerTest, SecondReplyIsIgnored) {
  Server server(LocalServerOptions());
  server.Register("twice", [](Request, Responder responder) {
    responder.Reply({Payload::FromString("first")});
    EXPECT_TRUE(responder.replied());
    responder.Reply({Payload::FromString("second")});
    responder.Fail(StatusCode::kInternal, "third");
  });
  server.Start();
  Client client(ClientFor(server));
  auto future = client.Call("twice", {});
  EXPECT_EQ(Get(future).payloads.at(0).ToString(), "first");
  auto again = client.Call("twice", {});  // the extra replies reached nobody
  EXPECT_EQ(Get(again).payloads.at(0).ToString(), "first");
}

TEST(ServerTest, UnknownMethodGivesNotFound) {
  Server server(LocalServerOptions());
  server.Register("echo", Echo);
  server.Start();
  Client client(ClientFor(server));
  auto future = client.Call("no_such_method", {});
  EXPECT_NE(ErrorOf<NotFound>(future).find("no_such_method"), std::string::npos);
  EXPECT_EQ(server.stats().unknown_method, 1u);
}

TEST(ServerTest, DeferredReplyDoesNotBlockOtherCalls) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 1;  // a held request must not occupy the only worker
  // Declared before the server: its handlers use them until it stops.
  std::mutex mutex;
  std::vector<Responder> held;
  Server server(options);
  server.Register("hold", [&](Request request, Responder responder) {
    EXPECT_TRUE(request.deadline > std::chrono::steady_clock::now());
    std::lock_guard lock(mutex);
    held.push_back(responder);
  });
  server.Register("echo", Echo);
  server.Start();
  Client client(ClientFor(server));

  auto held_call = client.Call("hold", {});
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard lock(mutex);
        return held.size() == 1;
      },
      10s));
  std::vector<std::future<Reply>> others;
  for (int i = 0; i < 50; ++i) {
    others.push_back(client.Call("echo", {Payload::FromString(std::to_string(i))}));
  }
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(Get(others[i]).payloads.at(0).ToString(), std::to_string(i));
  EXPECT_EQ(held_call.wait_for(0s), std::future_status::timeout);

  std::thread replier([&] {
    std::lock_guard lock(mutex);
    held[0].Reply({Payload::FromString("later")});
  });
  replier.join();
  EXPECT_EQ(Get(held_call).payloads.at(0).ToString(), "later");
}

TEST(ServerTest, ReplyToADisconnectedClientIsDroppedAndCounted) {
  std::mutex mutex;
  std::vector<Responder> held;
  Server server(LocalServerOptions());
  server.Register("hold", [&](Request, Responder responder) {
    std::lock_guard lock(mutex);
    held.push_back(responder);
  });
  server.Start();
  constexpr int kHeld = 20;
  {
    Client client(ClientFor(server));
    for (int i = 0; i < kHeld; ++i) client.Call("hold", {});
    ASSERT_TRUE(WaitUntil(
        [&] {
          std::lock_guard lock(mutex);
          return held.size() == kHeld;
        },
        10s));
  }  // the client is gone
  // ROUTER_MANDATORY reports the missing peer once the server has seen the
  // connection close (at once on loopback): answer until one is dropped.
  bool dropped = false;
  for (int i = 0; i < kHeld && !dropped; ++i) {
    std::lock_guard lock(mutex);
    held[i].Reply({Payload::FromString("nobody listens")});
    dropped = WaitUntil([&] { return server.stats().replies_dropped >= 1; }, 200ms);
  }
  EXPECT_TRUE(dropped);
}

TEST(ServerTest, FullQueueRejectsWithResourceExhausted) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 1;
  options.max_queued_requests = 2;
  Gate gate;  // outlives the server, whose handlers wait on it
  Server server(options);
  server.Register("block", [&](Request request, Responder responder) {
    gate.Wait();
    responder.Reply(std::move(request.payloads));
  });
  server.Start();
  Client client(ClientFor(server));

  auto running = client.Call("block", {});
  ASSERT_TRUE(gate.WaitEntered(1));
  // One connection is read in order: these two fill the queue, the third
  // finds it full.
  auto queued1 = client.Call("block", {});
  auto queued2 = client.Call("block", {});
  auto rejected = client.Call("block", {});
  EXPECT_NE(ErrorOf<ResourceExhausted>(rejected).find("queue full"), std::string::npos);
  gate.Open();
  Get(running);
  Get(queued1);
  Get(queued2);
  EXPECT_EQ(server.stats().rejected_queue_full, 1u);
}

TEST(ServerTest, RequestExpiredInTheQueueNeverRunsItsHandler) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 1;
  Gate gate;
  std::atomic<int> late_runs{0};
  Server server(options);
  server.Register("block", [&](Request, Responder responder) {
    gate.Wait();
    responder.Reply({});
  });
  server.Register("late", [&](Request, Responder responder) {
    late_runs++;
    responder.Reply({});
  });
  server.Start();
  Client client(ClientFor(server));

  auto running = client.Call("block", {});
  ASSERT_TRUE(gate.WaitEntered(1));
  CallOptions short_deadline;
  short_deadline.timeout = 100ms;
  auto expired = client.Call("late", {}, short_deadline);
  ASSERT_TRUE(WaitUntil([&] { return server.stats().requests == 2; }, 10s));
  const auto queued_at = std::chrono::steady_clock::now();
  EXPECT_NE(ErrorOf<DeadlineExceeded>(expired), "<no reply>");
  // The server's copy of the deadline (receipt + 100 ms) must have passed
  // too before the worker is freed; a generous margin covers the moments
  // between counting the request and stamping its deadline.
  WaitUntil([&] { return std::chrono::steady_clock::now() >= queued_at + 400ms; }, 10s);
  gate.Open();
  Get(running);
  EXPECT_TRUE(WaitUntil([&] { return server.stats().expired_in_queue == 1; }, 10s));
  EXPECT_EQ(late_runs.load(), 0);
}

TEST(ServerTest, StopWithCallsInFlightReturnsAndAnswersTheQueuedOnes) {
  ServerOptions options = LocalServerOptions();
  options.num_workers = 1;
  Gate gate;
  std::mutex mutex;
  std::vector<Responder> held;
  auto server = std::make_unique<Server>(options);
  server->Register("block", [&](Request, Responder responder) {
    gate.Wait();
    responder.Reply({});
  });
  server->Register("hold", [&](Request, Responder responder) {
    std::lock_guard lock(mutex);
    held.push_back(responder);
  });
  server->Start();
  Client client(ClientFor(*server));

  auto hold = client.Call("hold", {});
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard lock(mutex);
        return held.size() == 1;
      },
      10s));
  auto running = client.Call("block", {});
  ASSERT_TRUE(gate.WaitEntered(1));
  std::vector<std::future<Reply>> queued;
  for (int i = 0; i < 10; ++i) queued.push_back(client.Call("block", {}));
  ASSERT_TRUE(WaitUntil([&] { return server->stats().requests == 12; }, 10s));

  std::thread opener([&] {
    // The running handler finishes while Stop waits for it.
    std::this_thread::sleep_for(50ms);
    gate.Open();
  });
  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  server->Stop();  // idempotent
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  opener.join();

  EXPECT_NO_THROW(Get(running));
  for (auto& f : queued) EXPECT_NE(ErrorOf<Unavailable>(f), "<no reply>");
  // A Responder that outlives Stop: its reply is dropped, nothing crashes.
  {
    std::lock_guard lock(mutex);
    held[0].Reply({});
    EXPECT_TRUE(held[0].replied());
  }
  server.reset();
  held.clear();
  // The held call's connection closed with the server: not idempotent, so Unavailable.
  EXPECT_NE(ErrorOf<Unavailable>(hold), "<no reply>");
}

TEST(ServerTest, StopBeforeStartAndDestroyWithoutStopAreFine) {
  {
    Server server(LocalServerOptions());
    server.Stop();
    EXPECT_THROW(server.Start(), FailedPrecondition);
  }
  {
    Server server(LocalServerOptions());
    server.Register("echo", Echo);
    server.Start();
  }
}

// Bad input from a raw peer (cppzmq directly, in its own context, as a
// foreign process would be). After each bad message the same server must
// still answer the same peer and a normal client correctly.
class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = LocalServerOptions();
    options.limits.max_payloads = 8;
    options.max_message_bytes = 64 * 1024;
    server_ = std::make_unique<Server>(options);
    server_->Register("echo", Echo);
    server_->Start();
    client_ = std::make_unique<Client>(ClientFor(*server_));
    raw_.set(zmq::sockopt::linger, 0);
    raw_.connect(server_->endpoint());
  }

  static std::string RequestHeader(std::uint64_t id, const std::string& method,
                                   std::vector<PayloadDescriptor> payloads) {
    Header header;
    header.method = method;
    header.request_id = id;
    header.timeout_ms = 10000;
    header.payloads = std::move(payloads);
    return EncodeHeader(header);
  }

  void SendRaw(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      raw_.send(zmq::buffer(frames[i]),
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  // The header of the next message the raw peer receives (nullopt: none in 10 s).
  std::optional<Header> ReceiveRaw() {
    std::vector<zmq_pollitem_t> items = {{raw_.handle(), 0, ZMQ_POLLIN, 0}};
    if (zmq::poll(items, 10s) == 0) return std::nullopt;
    std::vector<zmq::message_t> frames;
    (void)zmq::recv_multipart(raw_, std::back_inserter(frames));
    return DecodeHeader({static_cast<const std::byte*>(frames.at(0).data()), frames[0].size()});
  }

  // The bad message got `code` as its reply.
  // Returns the reply's error message ("" when no reply came).
  std::string ExpectErrorReply(std::uint64_t id, StatusCode code) {
    const std::optional<Header> reply = ReceiveRaw();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return "";
    EXPECT_EQ(reply->request_id, id);
    EXPECT_EQ(reply->status, code) << reply->error_message;
    return reply->error_message;
  }

  // The bad message got no reply: the next reply answers a good request
  // sent after it (one connection is served in order).
  void ExpectDropped() {
    SendRaw({RequestHeader(4242, "echo", {})});
    const std::optional<Header> reply = ReceiveRaw();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->request_id, 4242u);
    EXPECT_EQ(reply->status, StatusCode::kOk);
  }

  void ExpectServerStillServes() {
    SendRaw({RequestHeader(77, "echo", {{DType::kInt32, {2}}}), std::string(8, 'x')});
    const std::optional<Header> raw_reply = ReceiveRaw();
    ASSERT_TRUE(raw_reply.has_value());
    EXPECT_EQ(raw_reply->request_id, 77u);
    EXPECT_EQ(raw_reply->status, StatusCode::kOk);
    auto future = client_->Call("echo", {Payload::FromString("still here")});
    EXPECT_EQ(Get(future).payloads.at(0).ToString(), "still here");
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  zmq::context_t context_{1};
  zmq::socket_t raw_{context_, zmq::socket_type::dealer};
};

TEST_F(BadInputTest, MissingPayloadFramesGetInvalidArgument) {
  SendRaw({RequestHeader(1, "echo", {{DType::kFloat32, {4}}})});
  ExpectErrorReply(1, StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->stats().malformed, 1u);
  ExpectServerStillServes();
}

TEST_F(BadInputTest, TruncatedHeaderIsDropped) {
  const std::string header = RequestHeader(2, "echo", {});
  SendRaw({header.substr(0, header.size() / 2)});
  ExpectDropped();
  EXPECT_EQ(server_->stats().malformed, 1u);
  ExpectServerStillServes();
}

TEST_F(BadInputTest, GarbageAndEmptyMessagesAreDropped) {
  SendRaw({std::string("\xc1\xff garbage \x00\x01", 13), std::string(100, '\xff')});
  ExpectDropped();
  SendRaw({std::string()});
  ExpectDropped();
  EXPECT_EQ(server_->stats().malformed, 2u);
  ExpectServerStillServes();
}

TEST_F(BadInputTest, UnknownMethodGetsNotFound) {
  SendRaw({RequestHeader(3, "nope", {})});
  ExpectErrorReply(3, StatusCode::kNotFound);
  ExpectServerStillServes();
}

TEST_F(BadInputTest, PayloadShorterOrLongerThanItsShapeGetsInvalidArgument) {
  SendRaw({RequestHeader(4, "echo", {{DType::kFloat64, {3}}}), std::string(23, 'a')});
  ExpectErrorReply(4, StatusCode::kInvalidArgument);
  SendRaw({RequestHeader(5, "echo", {{DType::kFloat64, {3}}}), std::string(25, 'a')});
  ExpectErrorReply(5, StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->stats().malformed, 2u);
  ExpectServerStillServes();
}

// The shape is judged from the header alone, against the size limit, with
// overflow-safe arithmetic (wire.h PayloadBytes): nothing is ever sized by
// it. The replies name the check that refused it, so a server that sized
// something first (and failed or succeeded at it) would answer otherwise.
TEST_F(BadInputTest, AbsurdShapeIsRefusedByTheSizeLimitBeforeAnythingIsSized) {
  SendRaw({RequestHeader(6, "echo", {{DType::kFloat32, {1LL << 40, 1LL << 40}}}), "tiny"});
  const std::string too_big = ExpectErrorReply(6, StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.find("exceeds the limit"), std::string::npos) << too_big;
  SendRaw({RequestHeader(7, "echo", {{DType::kUInt8, {-1}}}), ""});
  const std::string negative = ExpectErrorReply(7, StatusCode::kInvalidArgument);
  EXPECT_NE(negative.find("negative dimension"), std::string::npos) << negative;
  ExpectServerStillServes();
}

TEST_F(BadInputTest, TooManyFramesAndReplyKindGetInvalidArgument) {
  std::vector<std::string> frames = {RequestHeader(8, "echo", {})};
  for (int i = 0; i < 100; ++i) frames.push_back("frame");
  SendRaw(frames);
  ExpectErrorReply(8, StatusCode::kInvalidArgument);

  Header reply_kind;
  reply_kind.kind = MessageKind::kReply;
  reply_kind.request_id = 9;
  SendRaw({EncodeHeader(reply_kind)});
  ExpectErrorReply(9, StatusCode::kInvalidArgument);
  ExpectServerStillServes();
}

TEST_F(BadInputTest, APeerTakingTheWakeUpSocketsRoutingIdIsIgnored) {
  // The server's I/O thread is woken (for the workers' replies) by a
  // message from its own inproc socket with this routing id; the ROUTER
  // refuses a second peer with the same id, so an impostor gets nothing
  // and the workers' replies still reach everyone else.
  zmq::socket_t impostor(context_, zmq::socket_type::dealer);
  impostor.set(zmq::sockopt::linger, 0);
  impostor.set(zmq::sockopt::routing_id, "rlswarm-server-wake");
  impostor.connect(server_->endpoint());
  const std::string header = RequestHeader(11, "echo", {});
  impostor.send(zmq::buffer(header), zmq::send_flags::none);
  std::vector<zmq_pollitem_t> items = {{impostor.handle(), 0, ZMQ_POLLIN, 0}};
  EXPECT_EQ(zmq::poll(items, 300ms), 0);
  ExpectServerStillServes();
  ExpectServerStillServes();
}

TEST_F(BadInputTest, OversizedMessageDropsOnlyThatConnection) {
  zmq::socket_t monitor(context_, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  ASSERT_EQ(zmq_socket_monitor(raw_.handle(), "inproc://bad-input-monitor", ZMQ_EVENT_DISCONNECTED),
            0);
  monitor.connect("inproc://bad-input-monitor");

  SendRaw(
      {RequestHeader(10, "echo", {{DType::kUInt8, {128 * 1024}}}), std::string(128 * 1024, 'z')});
  std::vector<zmq_pollitem_t> items = {{monitor.handle(), 0, ZMQ_POLLIN, 0}};
  ASSERT_EQ(zmq::poll(items, 10s), 1) << "the server kept the connection";
  std::vector<zmq::message_t> event;
  (void)zmq::recv_multipart(monitor, std::back_inserter(event));
  zmq_socket_monitor(raw_.handle(), nullptr, 0);

  auto future = client_->Call("echo", {Payload::FromString("others unaffected")});
  EXPECT_EQ(Get(future).payloads.at(0).ToString(), "others unaffected");
  // The raw peer reconnects on its own and is served again.
  ExpectServerStillServes();
}

}  // namespace
}  // namespace rlswarm::rpc
