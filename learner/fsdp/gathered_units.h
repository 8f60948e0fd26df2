#pragma once

// The gathered (full) parameters of one ShardedModel::Forward() call, and the
// autograd glue that gives them back to the shards. Internal to learner/.
//
// Data path of one unit u in a sharded strategy (world size N > 1):
//   forward:  shard_u --all-gather--> data_u (padded flat, param dtype)
//             full_u = alias of data_u with its own version counter and an
//             autograd edge to ReduceScatterGrad(u) -> shard_u
//             layer views = ParamViews(full_u); y = unit forward(x, views)
//             full_shard: free data_u's storage (autograd's saved views keep
//             the StorageImpl, now empty); a hook on y re-gathers it
//   backward: hook on y (runs before u's backward) re-allocates and
//             re-gathers data_u, prefetches u-1 .. u-k
//             ReduceScatterGrad(u): issues grad(full_u) --reduce-scatter-->
//             asynchronously and frees data_u; backward goes on to unit u-1
//             while the reduction runs
//   hybrid:   each unit's reduced slice is all-reduced over the replica
//             group (asynchronous), issued once its reduce-scatter is done:
//             unit u+1's from ReduceScatterGrad(u), the rest in Step()
//   step:     ShardRuntime::FinishGradients waits for every reduction,
//             divides by the world size (N, or G x R for hybrid) and adds
//             the slice into shard_u.grad
// Writes always go through data_u, never through full_u or its views:
// writing through those would bump the version counter autograd recorded and
// backward would reject the saved views as "modified in place".
//
// Collective order is a function of the model alone (unit order, prefetch
// depths, strategy), so all ranks issue the same sequence.
//
// Not thread-safe; backward runs on the thread that calls it (CPU engine).

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <vector>

#include "learner/dist/communicator.h"
#include "learner/fsdp/shard_layout.h"
#include "learner/fsdp/sharding_options.h"

namespace rlswarm::learner {

// What every Forward() of one ShardedModel shares: kept alive by the
// ShardedModel and by any autograd graph still referring to it.
struct ShardRuntime {
  std::shared_ptr<Communicator> comm;  // the shard group
  // hybrid_shard: the replica group the reduced slices are all-reduced
  // over; null otherwise.
  std::shared_ptr<Communicator> replica;
  std::vector<UnitLayout> units;
  std::vector<at::Tensor> shards;  // one leaf per unit, master dtype
  ShardingOptions sharding;
  int64_t gathered_bytes = 0;
  int64_t peak_gathered_bytes = 0;
  // Reduce-scatters that backward issued and nobody waited for yet, in
  // issue order.
  struct PendingGradient {
    size_t unit = 0;
    PendingReduceScatter reduction;
    // Once the reduce-scatter is done: this rank's slice of the shard
    // group's sum and, on a 2-D mesh, its all-reduce over the replica group
    // (in place).
    at::Tensor slice;
    PendingCollective replica_reduction;
  };
  std::vector<PendingGradient> pending_gradients;
  // Reductions in flight at most; issuing one more first finishes the oldest.
  static constexpr size_t kMaxPendingGradients = 2;

  // Memory of units freed since (Free()), by size, for the next units to
  // gather into: no buffer goes back to malloc between updates. Holds at
  // most as many buffers as were gathered at once (prefetch depth + 2).
  std::multimap<size_t, c10::DataPtr> spare_buffers;

  void TrackGathered(int64_t delta);
  // A spare buffer of exactly `nbytes`, or an empty DataPtr.
  c10::DataPtr TakeSpareBuffer(size_t nbytes);
  // Gives a freed unit's memory to the spare buffers.
  void KeepSpareBuffer(size_t nbytes, c10::DataPtr data);
  int64_t spare_bytes = 0;  // held in spare_buffers
  // Waits for p's reduce-scatter and, on a 2-D mesh, issues the all-reduce
  // of its slice over the replica group; a no-op the second time. Every
  // rank calls it for the units in the same order (issue order on the
  // replica plane).
  void StartReplicaReduction(PendingGradient& p);
  // Waits for every pending reduction (throws what PendingCollective::Wait
  // throws) and adds each averaged slice, in the master dtype, into its
  // shard's gradient. Must run before anything reads or zeroes the
  // gradients; a no-op when nothing is pending.
  void FinishGradients();
  // Waits for the oldest pending reduction and adds its slice (as above).
  void FinishOldestGradient();
};

class GatheredUnits : public std::enable_shared_from_this<GatheredUnits> {
 public:
  explicit GatheredUnits(std::shared_ptr<ShardRuntime> runtime);
  ~GatheredUnits();
  GatheredUnits(const GatheredUnits&) = delete;
  GatheredUnits& operator=(const GatheredUnits&) = delete;

  // Allocates unit u's buffer and issues its all-gather unless it is already
  // gathered or in flight. Does not wait.
  void Issue(size_t u);
  // Issue(u) and wait for it (throws what PendingCollective::Wait throws).
  // Returns the full flat parameters; with `with_autograd` they carry an edge
  // to the shard through ReduceScatterGrad.
  at::Tensor Acquire(size_t u, bool with_autograd);
  // Frees unit u's gathered storage in place (reshard).
  void Free(size_t u);
  // Runs from the hook on unit u's output: makes u's params present again
  // and prefetches the units backward reaches next. Under shard_grad_op
  // (params still gathered) it only opens the trace's backward span.
  void BeforeBackward(size_t u);
  // Issues the reduction of unit u's full gradient into the shard's
  // gradient (collective, asynchronous: ShardRuntime::FinishGradients
  // completes it), then frees u's gathered storage.
  void ReduceGradient(size_t u, const at::Tensor& full_grad);

 private:
  struct Slot {
    at::Tensor data;  // writable alias; its StorageImpl is what gets freed
    PendingCollective pending;
    bool allocated = false;
    // From BeforeBackward to the gradient's reduction: the unit's backward
    // (trace_recorder.h; inactive unless tracing or in a CUDA build).
    TraceSpan backward;
  };

  std::shared_ptr<ShardRuntime> runtime_;
  std::vector<Slot> slots_;
};

}  // namespace rlswarm::learner
