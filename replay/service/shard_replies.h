#pragma once

// The replies of concurrent calls to several replay shards, handed to the
// one thread that waits for them in the order they arrive: the rpc client's
// completions deliver them, and the waiter sleeps on a condition variable
// until the next one (or its deadline) instead of polling each call.
// Shared (std::shared_ptr) with the completions of calls the waiter gave up
// on, which may still arrive after it left.

#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <optional>

#include "common/thread_annotations.h"
#include "rpc/client.h"

namespace rlswarm::replay {

struct ShardReply {
  std::size_t shard = 0;
  rpc::Reply reply;          // when error is null
  std::exception_ptr error;  // the call's failure
};

class ShardReplies {
 public:
  // A call's completion (rpc::Client::CallAsync's `done`): never blocks
  // beyond the short lock.
  void Deliver(std::size_t shard, rpc::Reply* reply, std::exception_ptr error)
      RLSWARM_EXCLUDES(mu_);
  // The next reply to arrive, waiting until `until`; nullopt when none
  // arrived by then.
  std::optional<ShardReply> WaitNext(std::chrono::steady_clock::time_point until)
      RLSWARM_EXCLUDES(mu_);

 private:
  Mutex mu_;
  CondVar arrived_;
  std::deque<ShardReply> replies_ RLSWARM_GUARDED_BY(mu_);
};

}  // namespace rlswarm::replay
