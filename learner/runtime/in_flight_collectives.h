#pragma once

// What a rank's collectives are doing right now, for the watchdog
// (watchdog.h) to read and report from its own thread: how many collectives
// were issued and finished on each plane, and which one the issuing thread is
// blocked waiting in (name, sequence number, since when).
//
// Sequence numbers count the collectives issued on one c10d group, 1, 2, ...
// Because c10d matches collectives across ranks by issue order
// (communicator.h), collective #s on one rank is the same collective as #s on
// every other rank, so ranks can compare where they are. With Gloo the data
// and the control plane are one group and share one count; with NCCL each
// plane counts its own.
//
// Thread-safe: the communicator's thread writes, any thread may Snapshot().
// Every call is a few words under one mutex; none blocks for longer.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/thread_annotations.h"

namespace rlswarm::learner {

enum class CollectivePlane : int { kData = 0, kControl = 1 };

// The collective a thread is blocked in.
struct BlockedCollective {
  std::string name;  // the caller's `what` ("all-gather of unit 'fc1'"), the same on every rank
  CollectivePlane plane = CollectivePlane::kData;
  int64_t seq = 0;
  std::chrono::steady_clock::time_point since;
};

struct CollectiveProgress {
  // Per plane (index: CollectivePlane): the newest sequence number issued,
  // and the highest s such that every collective up to s has completed here
  // (waited for, successfully or not). A peer blocked in #s <= done[plane]
  // waits for a collective this rank has already finished.
  std::array<int64_t, 2> issued{0, 0};
  std::array<int64_t, 2> done{0, 0};
  // When `done` last moved (this rank's clock; not sent to peers): every
  // collective up to `done` had completed by then.
  std::array<std::chrono::steady_clock::time_point, 2> done_at{};
  std::optional<BlockedCollective> blocked;
};

class InFlightCollectives {
 public:
  // Takes the next sequence number on `plane`: call where a collective is
  // issued, in issue order.
  int64_t Issue(CollectivePlane plane);
  // Collective #seq on `plane` completed (or failed); idempotent.
  void Complete(CollectivePlane plane, int64_t seq);
  CollectiveProgress Snapshot() const;

  // Marks the calling thread blocked in collective #seq for its scope; at
  // the end of the scope the collective counts as completed.
  class Waiting {
   public:
    Waiting(InFlightCollectives* record, CollectivePlane plane, int64_t seq,
            const std::string& name);
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    InFlightCollectives* record_;
    CollectivePlane plane_;
    int64_t seq_;
  };

 private:
  struct Plane {
    int64_t issued = 0;
    int64_t done = 0;
    std::chrono::steady_clock::time_point done_at{};
    std::set<int64_t> completed_ahead;  // completed out of order, above `done`
  };
  mutable Mutex mu_;
  std::array<Plane, 2> planes_ RLSWARM_GUARDED_BY(mu_);
  std::optional<BlockedCollective> blocked_ RLSWARM_GUARDED_BY(mu_);
};

// Where a PendingCollective reports its wait: the record (null: nothing is
// recorded, as for a local collective) and the collective's place in it.
struct CollectiveTicket {
  std::shared_ptr<InFlightCollectives> record;
  CollectivePlane plane = CollectivePlane::kData;
  int64_t seq = 0;
};

}  // namespace rlswarm::learner
