// SocketWaiter (one poll(2) per sleep instead of zmq_poll's three): it never
// sleeps through a message that is already waiting, wakes for one that
// arrives later, reports plain descriptors, and waits for room to send.

#include "rpc/internal/socket_waiter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "rpc/internal/context.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/mailbox.h"

namespace rlswarm::rpc::internal {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A connected DEALER/ROUTER pair over tcp on an ephemeral loopback port.
struct Pair {
  zmq::socket_t router{ProcessContext(), zmq::socket_type::router};
  zmq::socket_t dealer{ProcessContext(), zmq::socket_type::dealer};
  Pair() {
    router.set(zmq::sockopt::linger, 0);
    dealer.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    dealer.connect(router.get(zmq::sockopt::last_endpoint));
  }
  void SendToRouter(const std::string& text) {
    dealer.send(zmq::buffer(text), zmq::send_flags::none);
  }
};

// Receives everything waiting on `socket`, as a loop using the waiter does.
int Drain(zmq::socket_t& socket, SocketWaiter& waiter) {
  int messages = 0;
  ReceivedMessage message;
  while (ReceiveMessage(socket, 8, message)) {
    waiter.MarkUsed();
    ++messages;
  }
  waiter.MarkEmpty();
  return messages;
}

TEST(SocketWaiterTest, ReturnsAtOnceForAMessageThatIsAlreadyWaiting) {
  Pair pair;
  SocketWaiter waiter(pair.router);
  pair.SendToRouter("first");
  // Give the message time to arrive; the waiter has not seen the socket.
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(waiter.Wait(ZMQ_POLLIN, {}, milliseconds(5000)));
  EXPECT_EQ(Drain(pair.router, waiter), 1);
}

TEST(SocketWaiterTest, SleepsUntilAMessageArrivesAfterTheSocketWasFoundEmpty) {
  Pair pair;
  SocketWaiter waiter(pair.router);
  EXPECT_EQ(Drain(pair.router, waiter), 0);
  const auto start = Clock::now();
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(100));
    pair.SendToRouter("late");
  });
  bool ready = false;
  // ZMQ_FD may also wake for other commands (the connection coming up):
  // those wake-ups are allowed, and a receive then finds nothing.
  int messages = 0;
  while (messages == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    ready = waiter.Wait(ZMQ_POLLIN, {}, milliseconds(5000));
    if (ready) messages += Drain(pair.router, waiter);
  }
  sender.join();
  EXPECT_EQ(messages, 1);
  EXPECT_GE(Clock::now() - start, milliseconds(90));
}

TEST(SocketWaiterTest, DoesNotSleepThroughMessagesLeftAfterAReceive) {
  Pair pair;
  SocketWaiter waiter(pair.router);
  for (int i = 0; i < 3; ++i) pair.SendToRouter("m" + std::to_string(i));
  std::this_thread::sleep_for(milliseconds(50));
  ReceivedMessage message;
  ASSERT_TRUE(ReceiveMessage(pair.router, 8, message));
  waiter.MarkUsed();
  // Two more wait in the socket while its ZMQ_FD has nothing to report:
  // a plain poll would sleep for the whole timeout.
  const auto start = Clock::now();
  EXPECT_TRUE(waiter.Wait(ZMQ_POLLIN, {}, milliseconds(2000)));
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  EXPECT_EQ(Drain(pair.router, waiter), 2);
}

TEST(SocketWaiterTest, TimesOutWhenNothingComesAndReportsPlainDescriptors) {
  Pair pair;
  SocketWaiter waiter(pair.router);
  EXPECT_EQ(Drain(pair.router, waiter), 0);
  EventFd wake;
  std::array<pollfd, 1> others = {{{wake.fd(), POLLIN, 0}}};
  // Wake-ups from the connection's own commands are allowed; a message or
  // a signalled descriptor is not there, so it ends in a timeout.
  const auto start = Clock::now();
  while (Clock::now() - start < milliseconds(150)) {
    if (waiter.Wait(ZMQ_POLLIN, others, milliseconds(50))) {
      EXPECT_EQ(Drain(pair.router, waiter), 0);
    }
    EXPECT_EQ(others[0].revents, 0);
  }
  wake.Signal();
  EXPECT_FALSE(waiter.Wait(ZMQ_POLLIN, others, milliseconds(5000)));
  EXPECT_NE(others[0].revents & POLLIN, 0);
}

TEST(SocketWaiterTest, WaitsForRoomToSendAfterTheHighWaterMark) {
  // inproc pipes hold exactly sndhwm + rcvhwm messages.
  const std::string endpoint = UniqueInprocEndpoint("socket-waiter-test");
  zmq::socket_t pull(ProcessContext(), zmq::socket_type::pull);
  zmq::socket_t push(ProcessContext(), zmq::socket_type::push);
  pull.set(zmq::sockopt::linger, 0);
  push.set(zmq::sockopt::linger, 0);
  pull.set(zmq::sockopt::rcvhwm, 2);
  push.set(zmq::sockopt::sndhwm, 2);
  pull.bind(endpoint);
  push.connect(endpoint);
  SocketWaiter waiter(push);
  int sent = 0;
  while (push.send(zmq::str_buffer("x"), zmq::send_flags::dontwait)) ++sent;
  waiter.MarkUsed();
  ASSERT_GT(sent, 0);
  EXPECT_FALSE(waiter.Wait(ZMQ_POLLOUT, {}, milliseconds(100)));
  std::thread reader([&] {
    std::this_thread::sleep_for(milliseconds(50));
    zmq::message_t m;
    for (int i = 0; i < sent; ++i) (void)pull.recv(m);
  });
  bool room = false;
  const auto start = Clock::now();
  while (!room && Clock::now() - start < std::chrono::seconds(5)) {
    room = waiter.Wait(ZMQ_POLLOUT, {}, milliseconds(5000)) &&
           push.send(zmq::str_buffer("y"), zmq::send_flags::dontwait).has_value();
    waiter.MarkUsed();
  }
  reader.join();
  EXPECT_TRUE(room);
}

}  // namespace
}  // namespace rlswarm::rpc::internal
