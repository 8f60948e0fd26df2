#include "common/free_ports.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace rlswarm {
namespace {

// Binds 127.0.0.1:`port` and keeps it until destroyed.
class BoundPort {
 public:
  explicit BoundPort(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~BoundPort() { ::close(fd_); }
  bool bound() const { return bound_; }

 private:
  int fd_;
  bool bound_ = false;
};

TEST(FreePortsTest, APickedPortCanBeBoundAndABoundOneIsNotFree) {
  const int port = PickFreePort();
  ASSERT_GT(port, 0);
  BoundPort taken(port);
  ASSERT_TRUE(taken.bound());
  EXPECT_FALSE(PortIsFree(port));
}

TEST(FreePortsTest, ConsecutivePortsAreFreeAndAvoidTheTakenOnes) {
  const int first = PickFreePorts(3, {});
  for (int p = first; p < first + 3; ++p) EXPECT_TRUE(PortIsFree(p)) << p;
  const int other = PickFreePorts(2, {first, first + 1, first + 2});
  EXPECT_TRUE(other + 1 < first || other > first + 2) << other << " overlaps " << first;
}

}  // namespace
}  // namespace rlswarm
