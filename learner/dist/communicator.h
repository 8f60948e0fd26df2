#pragma once

// The collectives the sharded learner needs, on a c10d group (Gloo or NCCL,
// through learner/dist/torch_adapter.h), with what c10d does not do for us:
//  - errors become typed (DeadlineExceeded / Unavailable) and say which
//    collective on which rank failed;
//  - bytes are counted: the bytes this rank sends under the algorithm's ideal
//    volume (all-gather and all-to-all: (N-1)/N of the full buffer;
//    ring all-reduce: 2(N-1)/N), so runs at different world sizes compare;
//  - time is counted: each collective's span (issue to completion), summed
//    and as their union, and how long the caller was blocked waiting (none
//    of them is the share hidden behind compute: see CommStats);
//  - reduce-scatter exists everywhere: Gloo in LibTorch 1.13 throws on
//    reduce_scatter and _reduce_scatter_base, so there it is built from
//    alltoall_base plus a local sum (cheapest measured) or from all-reduce
//    plus a slice; NCCL and Gloo in 2.x have their own (kNative).
// Two planes: the data plane (`group`: parameters and gradients, tensors on
// the learner's device; NCCL on GPUs) and the control plane (`control`: a CPU
// Gloo group for stop agreement, checkpoint barriers and metrics). With Gloo
// both are one group. Without a group (world size 1) every collective is a
// local copy or a no-op.
//
// Ordering contract: c10d matches collectives across ranks by issue order, so
// every rank must issue the same collectives in the same order on each plane;
// the caller (ShardedModel) guarantees that by deriving the order from the
// model alone.
//
// Not thread-safe: one thread issues collectives (Gloo's own threads run them).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "learner/dist/torch_adapter.h"
#include "learner/dist/trace_recorder.h"
#include "learner/runtime/in_flight_collectives.h"
#include "learner/runtime/span_union.h"

namespace rlswarm::learner {

enum class ReduceScatterImpl {
  kAuto,       // kNative where the backend has it, else kAllToAll
  kAllToAll,   // alltoall_base, then sum the N received chunks locally
  kAllReduce,  // all-reduce the full buffer, keep this rank's slice
  kNative,     // the backend's _reduce_scatter_base (NCCL; Gloo in LibTorch 2.x)
};

struct CommStats {
  int64_t bytes_sent = 0;
  int64_t collectives = 0;
  // Sum over collectives of issue-to-completion time, and of the time the
  // issuing thread spent blocked in Wait(). The sum counts a collective's
  // time queued behind the others in flight, and counts every moment that
  // several collectives share once per collective, so it can exceed the
  // wall time it covers: it is no measure of how much communication an
  // update hides (learner_bench measures that against the update's compute
  // alone and its communication alone). On a backend that waits on
  // streams (NCCL) the host never sees a collective complete (its future
  // completes when the collective is queued), so busy_seconds is filled
  // only from the device's own timings (Communicator::CollectDeviceTimings)
  // and stays 0 without them.
  double busy_seconds = 0;
  double wait_seconds = 0;
  // The union of the same issue-to-completion spans: the wall time at least
  // one collective was in flight. Host clocks only: 0 on a backend that
  // waits on streams.
  double span_union_seconds = 0;
};

// Finished collectives whose device durations (the backend's CUDA events)
// are still to be read: an event can be read only once the device has
// passed it. Works are read and released as they complete, at every Add(),
// so the list holds the few the device has not reached yet, never more
// than kMaxHeld (past that the oldest is let go untimed): a Work keeps its
// output tensors and events alive. Not thread-safe.
class DeviceTimings {
 public:
  static constexpr size_t kMaxHeld = 64;
  void Add(c10::intrusive_ptr<c10d::Work> work);
  // Reads every held Work that has completed; returns how many are left.
  size_t Harvest();
  // Seconds over every collective added since Reset(), after the device
  // synchronised (so that every Work has completed); -1 when some could
  // not be timed (no timing in this backend or release, a Work let go at
  // kMaxHeld, one still running).
  double Finish();
  size_t held() const { return held_.size(); }
  void Reset();

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> held_;
  double seconds_ = 0;
  bool all_timed_ = true;
  bool any_ = false;
};

// A collective in flight. Wait() makes its result usable by what this
// thread does next, or throws DeadlineExceeded or Unavailable (see
// collective_errors.h). Waiting twice
// is a no-op. On Gloo, Wait() blocks the host until the collective is done,
// at most the group's timeout. On NCCL (stream_ordered), Wait() only makes
// the current CUDA stream wait for the collective's stream and the host
// goes on; NCCL's watchdog enforces the group's timeout, and with
// TORCH_NCCL_ASYNC_ERROR_HANDLING=2 aborts the communicator, so that the
// next collective on it throws (Unavailable) instead of the process dying.
class PendingCollective {
 public:
  PendingCollective() = default;
  // `timed`: where Wait() hands the finished Work for device timing (null:
  // none). `ticket`: where Wait() records that it is blocked in this
  // collective (for the watchdog; no record: nothing recorded). `spans`:
  // where Wait() adds the collective's span, whose union it then writes to
  // stats->span_union_seconds (null: nowhere).
  PendingCollective(c10::intrusive_ptr<c10d::Work> work, std::string what,
                    std::chrono::milliseconds timeout, CommStats* stats,
                    bool stream_ordered = false, DeviceTimings* timed = nullptr,
                    CollectiveTicket ticket = {}, SpanUnion* spans = nullptr);
  void Wait();
  bool pending() const { return static_cast<bool>(work_); }
  // Records this collective, from now to its completion, on the trace
  // (trace_recorder.h) under `kind` ("all-gather", ...) with `bytes` (the
  // full buffer) when a trace is active; a no-op otherwise.
  void TraceAs(const char* kind, const std::string& what, int64_t bytes);

 private:
  struct Timing;
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  std::chrono::milliseconds timeout_{0};
  CommStats* stats_ = nullptr;
  bool stream_ordered_ = false;
  DeviceTimings* timed_ = nullptr;
  SpanUnion* spans_ = nullptr;
  std::shared_ptr<Timing> timing_;
  TraceSpan trace_;
  int64_t trace_bytes_ = 0;
  CollectiveTicket ticket_;
};

// A reduce-scatter in flight: Wait() returns this rank's slice of the sum
// (see Communicator::ReduceScatterSumAsync). Holds the buffers it reads and
// writes until then.
class PendingReduceScatter {
 public:
  PendingReduceScatter() = default;
  at::Tensor Wait();
  bool pending() const { return pending_; }

 private:
  friend class Communicator;
  PendingCollective collective_;
  ReduceScatterImpl impl_ = ReduceScatterImpl::kNative;
  at::Tensor input_;   // kept alive while the backend reads it
  at::Tensor output_;  // what the backend writes
  int world_size_ = 1;
  int rank_ = 0;
  bool pending_ = false;
  bool local_ = false;  // no group: the input is the sum
};

class Communicator {
 public:
  // A world-size-1 communicator: no group, collectives are local.
  Communicator() = default;
  // `control` carries the control plane on CPU tensors; null = `group`
  // (which must then be a Gloo group). Throws InvalidArgument when
  // world_size > 1 without a group, or an NCCL group without a control group.
  Communicator(GroupPtr group, int rank, int world_size, std::chrono::milliseconds timeout,
               GroupPtr control = {});

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // True when collectives go through a process group (world size > 1, or a
  // 1-rank NCCL group that exercises the GPU path on one device).
  bool has_group() const { return static_cast<bool>(group_); }
  // "gloo", "nccl", or "none".
  std::string backend() const;
  ReduceScatterImpl Resolve(ReduceScatterImpl impl) const;
  // Whether the data plane can sum bfloat16 (true without a group).
  bool can_sum_bfloat16() const { return !group_ || CanSumBFloat16(*group_); }

  // Gathers every rank's `shard` (same numel on all ranks) into `full`
  // (world_size * shard.numel(), contiguous, same dtype), rank r's shard at
  // offset r * shard.numel(). Asynchronous: `full` is valid after Wait().
  // The backend writes into `full` itself where it can (HasFlatAllGather):
  // no second buffer, no copy.
  PendingCollective AllGather(const at::Tensor& shard, const at::Tensor& full,
                              const std::string& what);

  // Sums `full` (world_size * k elements) over ranks; Wait() returns this
  // rank's k-element slice of the sum. Asynchronous: the buffers it needs
  // are held by the returned object. Throws InvalidArgument for kNative on a
  // backend without it (Gloo in LibTorch 1.13), before issuing anything.
  PendingReduceScatter ReduceScatterSumAsync(const at::Tensor& full, ReduceScatterImpl impl,
                                             const std::string& what);
  // ReduceScatterSumAsync(...).Wait().
  at::Tensor ReduceScatterSum(const at::Tensor& full, ReduceScatterImpl impl,
                              const std::string& what);

  // Sums `tensor` over ranks in place on the data plane. Asynchronous.
  PendingCollective AllReduceSum(at::Tensor tensor, const std::string& what);
  // Sums a CPU `tensor` over ranks in place on the control plane. Blocking.
  void ControlAllReduceSum(at::Tensor tensor, const std::string& what);

  const CommStats& stats() const { return stats_; }
  void ResetStats() {
    stats_ = {};
    spans_.Reset();
    device_timings_.Reset();
  }
  // On CUDA, waiting does not block the host, so host-side spans say nothing
  // about communication time: with this on, finished collectives are timed
  // by their CUDA events (DeviceTimings) and CollectDeviceTimings() (after
  // the device synchronised) puts the total into stats().busy_seconds.
  // NCCL times its work only with TORCH_NCCL_ENABLE_TIMING=1 set before the
  // group was built.
  void set_collect_device_timings(bool on) { collect_device_timings_ = on; }
  void CollectDeviceTimings();
  // Finished collectives held for their device timings (at most
  // DeviceTimings::kMaxHeld).
  size_t device_timings_held() const { return device_timings_.held(); }
  // Whether Wait() orders streams instead of blocking the host (NCCL).
  bool stream_ordered() const { return stream_ordered_; }

  // Which collective this rank issued last and is blocked in, readable from
  // any thread (the watchdog's). Never null.
  std::shared_ptr<const InFlightCollectives> in_flight() const { return in_flight_; }

 private:
  // The next sequence number on `plane` (the data plane's when both planes
  // are one group).
  CollectiveTicket Ticket(CollectivePlane plane);
  std::string Context(const std::string& what) const;
  void CheckReducible(const at::Tensor& t, const std::string& what) const;

  GroupPtr group_;
  GroupPtr control_;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_{0};
  CommStats stats_;
  SpanUnion spans_;  // the data plane's collectives, for stats_.span_union_seconds
  bool stream_ordered_ = false;
  bool flat_all_gather_ = false;
  bool collect_device_timings_ = false;
  DeviceTimings device_timings_;
  std::shared_ptr<InFlightCollectives> in_flight_ = std::make_shared<InFlightCollectives>();
  // Where new PendingCollectives hand their Work (null unless timing).
  DeviceTimings* Timed() { return collect_device_timings_ ? &device_timings_ : nullptr; }
  // A data-plane collective in flight on this communicator's terms.
  PendingCollective Pending(c10::intrusive_ptr<c10d::Work> work, const std::string& what);
};

}  // namespace rlswarm::learner
