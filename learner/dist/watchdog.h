#pragma once

// Watchdog: sees a peer rank stop (SIGSTOP, a frozen or lost host) or hang in
// a collective while alive, within WatchdogOptions::timeout, instead of after
// the collective timeout, and says which rank and which collective
// (heartbeat.h has the rules and what counts as merely waiting).
//
// Each rank runs one thread that sends a heartbeat to every peer every
// `interval` and listens for theirs; the heartbeat carries the rank's
// collective record (Communicator::in_flight(): issued, completed, and the
// collective it is blocked in, since when). The heartbeat is the thread's
// own, not the training loop's progress, which also stops, rightly, while
// every rank waits on replay or on a checkpoint save.
//
// Transport: one UDP socket per rank, bound to the local address this rank
// uses to reach the rendezvous master (or to learner's Gloo address when one
// is set), port 0; the addresses and a random group token are exchanged once
// at start in one control-plane all-reduce. Why not the rendezvous store: it is
// hosted by rank 0 (or the launcher), and when its host is the rank that
// stopped, every store call of the others hangs until the store timeout,
// which is what the watchdog is for; the store also outlives a group restart
// under torchrun's agent, so keys would need an incarnation. UDP datagrams
// to a stopped peer are dropped without blocking, no rank depends on
// another's to see it, and nothing listens beyond the interface the rank
// already uses. Datagrams without the group's token are dropped.
//
// What happens on an alarm is the caller's: `rlswarm learner` logs it and
// exits with kWatchdogExitCode so the launcher restarts the group from its
// checkpoint (the training thread is blocked in a collective and cannot be
// unwound). The callback runs on the watchdog thread, once.
//
// Thread safety: the constructor is a collective (every rank constructs it
// at the same point of the collective order, on the thread that issues
// collectives); the destructor tells the peers this rank is leaving (so its
// silence is not an alarm) and joins the thread.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "learner/dist/communicator.h"
#include "learner/runtime/heartbeat.h"
#include "learner/runtime/net_address.h"  // LocalAddressTowards, for bind_address

namespace rlswarm::learner {

// The exit code of `rlswarm learner` after a watchdog alarm (EX_TEMPFAIL in
// sysexits.h: a temporary failure, worth a retry). The launcher's supervisor
// restarts the learner group on any non-zero exit; the code tells a watchdog
// exit from a crash (1) or a config error (2) in the logs.
inline constexpr int kWatchdogExitCode = 75;

struct WatchdogOptions {
  // A peer silent (or hung in a collective this rank completed) for longer
  // than this raises the alarm. learner.watchdog_timeout_s.
  std::chrono::milliseconds timeout{30000};
  // Between heartbeats; 0 = timeout / 6, at most 1 s.
  std::chrono::milliseconds interval{0};
  // The numeric local address (IPv4 or IPv6) to bind; LocalAddressTowards()
  // finds the one a rank uses.
  std::string bind_address = "127.0.0.1";

  // Throws InvalidArgument: timeout <= 0, interval < 0 or >= timeout, empty
  // bind_address.
  void Validate() const;
  std::chrono::milliseconds EffectiveInterval() const;
};

class Watchdog {
 public:
  using OnAlarm = std::function<void(const WatchdogAlarm&)>;

  // Binds the socket, exchanges addresses with every rank (one
  // ControlAllReduceSum on `comm`: blocks until every rank has called it or
  // the group timeout passes; throws what it throws) and starts the thread.
  // Throws InvalidArgument for bad options or a communicator without a group,
  // Unavailable when the socket cannot be bound.
  // `subgroups`: the records of this rank's other communicators
  // (hybrid_shard's shard and replica groups, ShardMesh): a collective this
  // rank is blocked in there is named in its alarm message. They are not
  // sent or judged: their sequence numbers count another group's
  // collectives, which `comm`'s peers cannot compare.
  Watchdog(Communicator& comm, WatchdogOptions options, OnAlarm on_alarm,
           std::vector<std::shared_ptr<const InFlightCollectives>> subgroups = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // "udp://ADDRESS:PORT" this rank listens on.
  std::string endpoint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace rlswarm::learner
