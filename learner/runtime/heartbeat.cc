#include "learner/runtime/heartbeat.h"

#include <cstdio>
#include <sstream>

namespace rlswarm::learner {
namespace {

constexpr const char* kMagic = "rlswarm-heartbeat/1";
constexpr size_t kMaxName = 200;

double Seconds(WatchdogClock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Fixed1(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", x);
  return buf;
}

const char* PlaneName(CollectivePlane plane) {
  return plane == CollectivePlane::kData ? "data plane" : "control plane";
}

}  // namespace

std::string EncodeHeartbeat(const Heartbeat& h) {
  std::ostringstream out;
  out << kMagic << ' ' << h.token << ' ' << h.rank << ' ' << h.beat << ' ' << (h.leaving ? 1 : 0)
      << ' ' << h.issued[0] << ' ' << h.issued[1] << ' ' << h.done[0] << ' ' << h.done[1];
  if (h.blocked) {
    out << " 1 " << static_cast<int>(h.blocked->plane) << ' ' << h.blocked->seq << ' '
        << h.blocked_ms << ' ' << h.blocked->name.substr(0, kMaxName);
  } else {
    out << " 0";
  }
  return out.str();
}

std::optional<Heartbeat> DecodeHeartbeat(const std::string& datagram) {
  std::istringstream in(datagram);
  std::string magic;
  Heartbeat h;
  int leaving = 0;
  int blocked = 0;
  if (!(in >> magic) || magic != kMagic) return std::nullopt;
  if (!(in >> h.token >> h.rank >> h.beat >> leaving >> h.issued[0] >> h.issued[1] >> h.done[0] >>
        h.done[1] >> blocked)) {
    return std::nullopt;
  }
  if (h.rank < 0 || (leaving != 0 && leaving != 1) || (blocked != 0 && blocked != 1)) {
    return std::nullopt;
  }
  h.leaving = leaving == 1;
  if (blocked == 1) {
    int plane = 0;
    BlockedCollective b;
    if (!(in >> plane >> b.seq >> h.blocked_ms) || (plane != 0 && plane != 1) || h.blocked_ms < 0) {
      return std::nullopt;
    }
    b.plane = static_cast<CollectivePlane>(plane);
    in.get();  // the space before the name
    std::getline(in, b.name);
    h.blocked = std::move(b);
  }
  return h;
}

Heartbeat OwnHeartbeat(uint64_t token, int rank, uint64_t beat, const CollectiveProgress& progress,
                       WatchdogClock::time_point now) {
  Heartbeat h;
  h.token = token;
  h.rank = rank;
  h.beat = beat;
  h.issued = progress.issued;
  h.done = progress.done;
  h.blocked = progress.blocked;
  if (h.blocked) {
    h.blocked_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - h.blocked->since).count();
  }
  return h;
}

void Hear(PeerView& peer, const Heartbeat& h, WatchdogClock::time_point now) {
  if (peer.heard && h.beat <= peer.beat) return;
  peer.heard = true;
  peer.beat = h.beat;
  peer.last_heard = now;
  peer.left = peer.left || h.leaving;
  peer.progress.issued = h.issued;
  peer.progress.done = h.done;
  peer.progress.blocked = h.blocked;
  if (peer.progress.blocked) {
    peer.progress.blocked->since = now - std::chrono::milliseconds(h.blocked_ms);
  }
}

std::string DescribeProgress(const CollectiveProgress& p, WatchdogClock::time_point now) {
  if (p.blocked) {
    return "blocked in '" + p.blocked->name + "' (#" + std::to_string(p.blocked->seq) + ", " +
           PlaneName(p.blocked->plane) + ") for " + Fixed1(Seconds(now - p.blocked->since)) + " s";
  }
  std::string s = "not in a collective (" + std::to_string(p.issued[0]) + " issued, " +
                  std::to_string(p.done[0]) + " done";
  if (p.issued[1] > 0) {
    s += "; control plane " + std::to_string(p.issued[1]) + " issued, " +
         std::to_string(p.done[1]) + " done";
  }
  return s + ")";
}

std::optional<WatchdogAlarm> JudgePeers(int own_rank, const CollectiveProgress& own,
                                        const std::vector<PeerView>& peers,
                                        WatchdogClock::time_point now,
                                        std::chrono::milliseconds timeout) {
  const std::string self =
      "this rank (" + std::to_string(own_rank) + ") is " + DescribeProgress(own, now);
  for (const PeerView& peer : peers) {
    if (peer.left || now - peer.last_heard <= timeout) continue;
    WatchdogAlarm alarm;
    alarm.peer = peer.rank;
    alarm.stopped = true;
    alarm.message =
        "rank " + std::to_string(peer.rank) + " stopped: no heartbeat for " +
        Fixed1(Seconds(now - peer.last_heard)) + " s (timeout " + Fixed1(Seconds(timeout)) +
        " s); " +
        (peer.heard ? "it last reported being " + DescribeProgress(peer.progress, peer.last_heard)
                    : std::string("it never sent one")) +
        "; " + self;
    return alarm;
  }
  for (const PeerView& peer : peers) {
    if (peer.left || !peer.progress.blocked) continue;
    const BlockedCollective& b = *peer.progress.blocked;
    if (now - b.since <= timeout) continue;
    const int plane = static_cast<int>(b.plane);
    if (own.done[plane] < b.seq) continue;  // it may be waiting for this rank
    // A heartbeat sent just before the peer's own completion still says
    // "blocked": only a report heard more than T after this rank finished
    // (an upper bound of when it finished #s) proves the peer is stuck.
    if (peer.last_heard - own.done_at[plane] <= timeout) continue;
    WatchdogAlarm alarm;
    alarm.peer = peer.rank;
    alarm.message = "rank " + std::to_string(peer.rank) +
                    " is alive but hung in a collective this rank has completed: it is " +
                    DescribeProgress(peer.progress, now) + " (timeout " + Fixed1(Seconds(timeout)) +
                    " s); " + self;
    return alarm;
  }
  return std::nullopt;
}

}  // namespace rlswarm::learner
