#pragma once

// Internal: the client's book of calls that have not completed yet: by
// request id (to match replies), by deadline (to expire them), and a FIFO
// of the ones still to send (new calls, and calls to resend after a
// reconnect).
//
// Thread-safety: none; owned by the client's I/O thread.

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rpc/client.h"

namespace rlswarm::rpc::internal {

using CallDone = std::function<void(Reply*, std::exception_ptr)>;

struct CallRecord {
  std::uint64_t id = 0;
  std::string method;
  std::vector<Payload> payloads;  // kept for resending
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds timeout{0};
  bool idempotent = false;
  int attempts = 0;        // sends that may have reached the server
  bool in_flight = false;  // sent on the current connection
  CallDone done;
};

class PendingCalls {
 public:
  using Clock = std::chrono::steady_clock;

  // A new call; it goes to the back of the send queue.
  void Add(std::unique_ptr<CallRecord> call);
  // Removes and returns the call, or nullptr if it is not pending.
  std::unique_ptr<CallRecord> Remove(std::uint64_t id);

  // The first call waiting to be sent, or nullptr.
  CallRecord* NextUnsent();
  // Marks NextUnsent() as sent on the current connection.
  void MarkSent();

  // Calls sent on the current connection, in request id order.
  std::vector<CallRecord*> InFlight();
  // Puts these in-flight calls back at the front of the send queue.
  void Requeue(const std::vector<CallRecord*>& calls);

  // Removes the calls whose deadline is <= now.
  std::vector<std::unique_ptr<CallRecord>> TakeExpired(Clock::time_point now);
  std::optional<Clock::time_point> NextDeadline() const;
  std::vector<std::unique_ptr<CallRecord>> TakeAll();
  bool empty() const { return calls_.empty(); }
  std::size_t size() const { return calls_.size(); }
  // Entries in the deadline heap, live or not (for tests: bounded by about
  // twice the pending calls).
  std::size_t deadline_entries() const { return deadlines_.size(); }

 private:
  using Deadline = std::pair<Clock::time_point, std::uint64_t>;
  // Pops entries of calls that completed since (lazy deletion).
  void PruneDeadlines() const;

  std::unordered_map<std::uint64_t, std::unique_ptr<CallRecord>> calls_;
  // A min-heap by deadline (std::greater): adding a call allocates nothing
  // once the vector has grown. Remove leaves the entry behind; NextDeadline
  // and TakeExpired drop such entries when they reach the top, and Remove
  // rebuilds the heap when they outnumber the live ones.
  mutable std::vector<Deadline> deadlines_;
  // Ids to send, oldest first; may hold ids of calls completed since
  // (skipped lazily).
  std::deque<std::uint64_t> unsent_;
};

}  // namespace rlswarm::rpc::internal
