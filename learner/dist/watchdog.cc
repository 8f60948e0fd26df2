#include "learner/dist/watchdog.h"

#include <ATen/ATen.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "common/errors.h"
#include "learner/runtime/net_address.h"

namespace rlswarm::learner {
namespace {

using namespace std::chrono_literals;

// Per rank in the start-up all-reduce: token, port, address length, address.
constexpr int64_t kAddressChars = 48;  // an IPv6 address has at most 45
constexpr int64_t kSlot = 3 + kAddressChars;

using Address = SocketAddress;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

void WatchdogOptions::Validate() const {
  if (timeout.count() <= 0) throw InvalidArgument("watchdog: timeout must be > 0");
  if (interval.count() < 0 || (interval.count() > 0 && interval >= timeout)) {
    throw InvalidArgument("watchdog: interval must be in [0, timeout)");
  }
  if (bind_address.empty()) throw InvalidArgument("watchdog: bind_address is empty");
}

std::chrono::milliseconds WatchdogOptions::EffectiveInterval() const {
  if (interval.count() > 0) return interval;
  return std::clamp(timeout / 6, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
}

struct Watchdog::Impl {
  Impl(WatchdogOptions o, OnAlarm alarm, std::shared_ptr<const InFlightCollectives> record, int r)
      : options(std::move(o)), on_alarm(std::move(alarm)), in_flight(std::move(record)), rank(r) {}

  void Run();
  void Receive(WatchdogClock::time_point now);
  void Send(bool leaving);

  const WatchdogOptions options;
  const OnAlarm on_alarm;
  const std::shared_ptr<const InFlightCollectives> in_flight;
  const int rank;
  std::unique_ptr<Fd> socket;
  std::unique_ptr<Fd> stop;  // an eventfd: written by the destructor, polled by Run
  std::string endpoint;
  uint64_t token = 0;
  uint64_t beat = 0;
  // Only the watchdog thread touches these after the constructor.
  std::vector<Address> peer_addresses;                                // by rank; this rank's unused
  std::vector<PeerView> peers;                                        // every rank but this one
  std::vector<std::shared_ptr<const InFlightCollectives>> subgroups;  // named in alarms only
};

Watchdog::Watchdog(Communicator& comm, WatchdogOptions options, OnAlarm on_alarm,
                   std::vector<std::shared_ptr<const InFlightCollectives>> subgroups) {
  options.Validate();
  if (!comm.has_group()) throw InvalidArgument("watchdog: needs a communicator with a group");
  const int rank = comm.rank();
  const int world = comm.world_size();
  impl_ = std::make_unique<Impl>(std::move(options), std::move(on_alarm), comm.in_flight(), rank);
  Impl& s = *impl_;
  s.subgroups = std::move(subgroups);

  const Address local = ResolveAddress(s.options.bind_address, 0, AI_NUMERICHOST);
  s.socket = std::make_unique<Fd>(
      ::socket(local.addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.socket->get() < 0 ||
      ::bind(s.socket->get(), reinterpret_cast<const sockaddr*>(&local.addr), local.len) != 0) {
    throw Unavailable("watchdog: cannot bind udp " + s.options.bind_address +
                      ":0: " + std::strerror(errno));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  ::getsockname(s.socket->get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  uint16_t port = 0;
  const std::string host = NumericHost(bound, bound_len, &port);
  s.endpoint = "udp://" + host + ":" + std::to_string(port);
  s.stop = std::make_unique<Fd>(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (s.stop->get() < 0) throw Unavailable("watchdog: eventfd failed");

  // Every rank fills its own row, the sum gives every rank all rows.
  at::Tensor table = at::zeros({world, kSlot}, at::kLong);
  {
    auto rows = table.accessor<int64_t, 2>();
    if (rank == 0) {
      std::random_device random;
      rows[rank][0] = static_cast<int64_t>(((uint64_t{random()} << 32) | random()) >> 1);
    }
    rows[rank][1] = port;
    rows[rank][2] = static_cast<int64_t>(host.size());
    for (size_t i = 0; i < host.size() && i < static_cast<size_t>(kAddressChars); ++i) {
      rows[rank][3 + static_cast<int64_t>(i)] = static_cast<unsigned char>(host[i]);
    }
  }
  comm.ControlAllReduceSum(table, "watchdog address exchange");
  auto all = table.accessor<int64_t, 2>();
  s.token = static_cast<uint64_t>(all[0][0]);
  s.peer_addresses.resize(world);
  const auto start = WatchdogClock::now();
  for (int r = 0; r < world; ++r) {
    if (r == rank) continue;
    std::string peer_host;
    for (int64_t i = 0; i < std::min(all[r][2], kAddressChars); ++i) {
      peer_host.push_back(static_cast<char>(all[r][3 + i]));
    }
    s.peer_addresses[r] =
        ResolveAddress(peer_host, static_cast<uint16_t>(all[r][1]), AI_NUMERICHOST);
    PeerView view;
    view.rank = r;
    view.last_heard = start;  // every rank was alive at the exchange
    s.peers.push_back(view);
  }
  spdlog::info("watchdog: heartbeats on {} every {} ms; a peer silent for {} ms stops this rank",
               s.endpoint, s.options.EffectiveInterval().count(), s.options.timeout.count());
  thread_ = std::thread([&s] { s.Run(); });
}

Watchdog::~Watchdog() {
  if (!impl_) return;
  const uint64_t one = 1;
  (void)!::write(impl_->stop->get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

std::string Watchdog::endpoint() const { return impl_->endpoint; }

void Watchdog::Impl::Send(bool leaving) {
  Heartbeat h = OwnHeartbeat(token, rank, ++beat, in_flight->Snapshot(), WatchdogClock::now());
  h.leaving = leaving;
  const std::string datagram = EncodeHeartbeat(h);
  for (const PeerView& peer : peers) {
    const Address& a = peer_addresses[peer.rank];
    // Best effort: a peer that is down or not reading just misses it.
    (void)::sendto(socket->get(), datagram.data(), datagram.size(), MSG_DONTWAIT,
                   reinterpret_cast<const sockaddr*>(&a.addr), a.len);
  }
}

void Watchdog::Impl::Receive(WatchdogClock::time_point now) {
  char buffer[2048];
  for (;;) {
    const ssize_t n = ::recv(socket->get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0) return;  // EAGAIN: drained (other errors: try again next round)
    const std::optional<Heartbeat> h = DecodeHeartbeat(std::string(buffer, static_cast<size_t>(n)));
    if (!h || h->token != token || h->rank == rank) continue;
    for (PeerView& peer : peers) {
      if (peer.rank == h->rank) Hear(peer, *h, now);
    }
  }
}

void Watchdog::Impl::Run() {
  const auto interval = options.EffectiveInterval();
  auto next_send = WatchdogClock::now();
  auto last_wake = next_send;
  bool alarmed = false;
  for (;;) {
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_send - WatchdogClock::now());
    pollfd fds[2] = {{stop->get(), POLLIN, 0}, {socket->get(), POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(std::max<int64_t>(0, wait.count()) + 1));
    if (fds[0].revents != 0) break;
    const auto now = WatchdogClock::now();
    // This thread itself did not run for half a timeout (the whole process
    // was stopped and continued, the host was suspended): peers' silence
    // over that gap says nothing about them, so they get a fresh window.
    if (now - last_wake > options.timeout / 2) {
      spdlog::warn("watchdog: this rank did not run for {} ms; restarting the peers' clocks",
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - last_wake).count());
      for (PeerView& peer : peers) peer.last_heard = now;
    }
    last_wake = now;
    Receive(now);
    if (now >= next_send) {
      Send(/*leaving=*/false);
      next_send = now + interval;
    }
    if (alarmed) continue;
    if (std::optional<WatchdogAlarm> alarm =
            JudgePeers(rank, in_flight->Snapshot(), peers, now, options.timeout)) {
      alarmed = true;
      for (const auto& record : subgroups) {
        const CollectiveProgress sub = record->Snapshot();
        if (sub.blocked) {
          alarm->message += "; on a subgroup this rank is " + DescribeProgress(sub, now);
        }
      }
      try {
        on_alarm(*alarm);
      } catch (const std::exception& e) {
        spdlog::error("watchdog: the alarm callback threw: {}", e.what());
      }
    }
  }
  // Twice: a lost datagram would make the peers count this exit as a stop.
  Send(/*leaving=*/true);
  Send(/*leaving=*/true);
}

}  // namespace rlswarm::learner
