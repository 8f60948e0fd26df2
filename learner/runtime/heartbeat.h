#pragma once

// The watchdog's message and its judgement (watchdog.h runs the thread and
// the sockets): what a rank says about itself in each heartbeat, and which
// peer, if any, has stopped, given the heartbeats heard so far. Plain values
// and pure functions, so every rule is unit-tested without processes.
//
// The rules (timeout T = learner.watchdog_timeout_s):
//  1. A peer stopped: no heartbeat from it for longer than T (SIGSTOP, a
//     frozen process, a dead host). A peer that said it was leaving (a clean
//     exit, or an error on its way out) is never judged again.
//  2. A peer hung in a collective while alive: its heartbeats keep coming,
//     it has been blocked in collective #s for longer than T, this rank has
//     already completed #s (and everything before it), and the peer still
//     said so in a heartbeat heard more than T after this rank's completion
//     (so a report sent just before the peer's own completion does not
//     count). That collective cannot be waiting for this rank any more.
//  Everything else is waiting, and is left alone (the collective timeout
//  bounds it): every rank blocked in the same #s (one rank still computing,
//  saving a checkpoint, or waiting on replay before it issues #s), or a peer
//  alive and not in a collective (waiting on an empty replay) however long.
//  A peer blocked in #s that this rank has issued but not completed is also
//  waiting as far as this rank can tell; should that collective hang on
//  every rank, the collective timeout ends it.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "learner/runtime/in_flight_collectives.h"

namespace rlswarm::learner {

using WatchdogClock = std::chrono::steady_clock;

// One heartbeat datagram.
struct Heartbeat {
  uint64_t token = 0;  // the group's: rank 0 draws it at start; others' datagrams are dropped
  int rank = 0;
  uint64_t beat = 0;     // rises by one per heartbeat: reordered datagrams are dropped
  bool leaving = false;  // the rank is shutting its watchdog down: do not judge it
  std::array<int64_t, 2> issued{0, 0};
  std::array<int64_t, 2> done{0, 0};
  // The collective the rank is blocked in, and for how long (a duration, not
  // a time point: the ranks' steady clocks are unrelated).
  std::optional<BlockedCollective> blocked;  // `since` unused on the wire
  int64_t blocked_ms = 0;
};

// One line of text (names of collectives are cut at 200 bytes).
std::string EncodeHeartbeat(const Heartbeat& h);
// nullopt for anything that is not a heartbeat (garbage is dropped).
std::optional<Heartbeat> DecodeHeartbeat(const std::string& datagram);

// The heartbeat taken from this rank's own record.
Heartbeat OwnHeartbeat(uint64_t token, int rank, uint64_t beat, const CollectiveProgress& progress,
                       WatchdogClock::time_point now);

// What this rank knows of one peer.
struct PeerView {
  int rank = 0;
  WatchdogClock::time_point last_heard;  // the start of the watchdog until the first heartbeat
  bool heard = false;                    // any heartbeat yet
  bool left = false;
  uint64_t beat = 0;
  CollectiveProgress progress;  // blocked->since on this rank's clock
};

// Takes a received heartbeat into `peer` (an older or repeated beat is ignored).
void Hear(PeerView& peer, const Heartbeat& h, WatchdogClock::time_point now);

struct WatchdogAlarm {
  int peer = -1;         // the rank that stopped or hung
  bool stopped = false;  // rule 1 (no heartbeat); false: rule 2 (hung while alive)
  std::string message;   // names the peer, what it last reported and what this rank is blocked in
};

// The first peer that breaks rule 1 (checked for every peer first), then
// rule 2; nullopt when the group is only waiting.
std::optional<WatchdogAlarm> JudgePeers(int own_rank, const CollectiveProgress& own,
                                        const std::vector<PeerView>& peers,
                                        WatchdogClock::time_point now,
                                        std::chrono::milliseconds timeout);

// "blocked in 'all-gather of unit fc1' (#57, data plane) for 1.2 s", or "not in a
// collective (57 issued, 57 done)".
std::string DescribeProgress(const CollectiveProgress& progress, WatchdogClock::time_point now);

}  // namespace rlswarm::learner
