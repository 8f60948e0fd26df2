#pragma once

// The collectives the sharded learner needs, on a c10d ProcessGroup, with
// three things c10d does not do for us:
//  - errors become typed (DeadlineExceeded / Unavailable) and say which
//    collective on which rank failed;
//  - bytes are counted: the bytes this rank sends under the algorithm's ideal
//    volume (all-gather and all-to-all: (N-1)/N of the full buffer;
//    ring all-reduce: 2(N-1)/N), so runs at different world sizes compare;
//  - reduce-scatter exists: Gloo in LibTorch 1.13 throws on reduce_scatter
//    and _reduce_scatter_base, so it is built from alltoall_base plus a local
//    sum (default, cheapest measured) or from all-reduce plus a slice.
// At world size 1 every collective is a local copy or a no-op and no
// ProcessGroup is needed.
//
// Ordering contract: c10d matches collectives across ranks by issue order, so
// every rank must issue the same collectives in the same order; the caller
// (ShardedModel) guarantees that by deriving the order from the model alone.
//
// Not thread-safe: one thread issues collectives (Gloo's own threads run them).

#include <chrono>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace rlswarm::learner {

enum class ReduceScatterImpl {
  kAllToAll,   // alltoall_base, then sum the N received chunks locally
  kAllReduce,  // all-reduce the full buffer, keep this rank's slice
  kNative,     // the backend's _reduce_scatter_base (NCCL); not on Gloo
};

struct CommStats {
  int64_t bytes_sent = 0;
  int64_t collectives = 0;
};

// A collective in flight. Wait() blocks until it completes or the group's
// timeout passes; throws DeadlineExceeded or Unavailable (see
// collective_errors.h). Waiting twice is a no-op.
class PendingCollective {
 public:
  PendingCollective() = default;
  PendingCollective(c10::intrusive_ptr<c10d::Work> work, std::string what,
                    std::chrono::milliseconds timeout);
  void Wait();
  bool pending() const { return static_cast<bool>(work_); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  std::chrono::milliseconds timeout_{0};
};

class Communicator {
 public:
  // A world-size-1 communicator: no group, collectives are local.
  Communicator() = default;
  Communicator(c10::intrusive_ptr<c10d::ProcessGroup> group, int rank, int world_size,
               std::chrono::milliseconds timeout);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // Gathers every rank's `shard` (same numel on all ranks) into `full`
  // (world_size * shard.numel(), contiguous, same dtype), rank r's shard at
  // offset r * shard.numel(). Asynchronous: `full` is valid after Wait().
  PendingCollective AllGather(const at::Tensor& shard, const at::Tensor& full,
                              const std::string& what);

  // Sums `full` (world_size * k elements) over ranks and returns this rank's
  // k-element slice of the sum. Blocking. Throws InvalidArgument for kNative
  // on Gloo, which lacks it.
  at::Tensor ReduceScatterSum(const at::Tensor& full, ReduceScatterImpl impl,
                              const std::string& what);

  // Sums `tensor` over ranks in place. Asynchronous.
  PendingCollective AllReduceSum(at::Tensor tensor, const std::string& what);

  const CommStats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }

 private:
  std::string Context(const std::string& what) const;
  void CheckReducible(const at::Tensor& t, const std::string& what) const;

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_{0};
  CommStats stats_;
};

}  // namespace rlswarm::learner
