#include "learner/dist/communicator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>

#include "common/errors.h"
#include "learner/runtime/collective_errors.h"

namespace rlswarm::learner {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

// When the collective was issued and when the backend completed it (set by
// the future's callback on a backend thread; 0 until then).
struct PendingCollective::Timing {
  int64_t issued_ns = 0;
  std::atomic<int64_t> completed_ns{0};
};

PendingCollective::PendingCollective(c10::intrusive_ptr<c10d::Work> work, std::string what,
                                     std::chrono::milliseconds timeout, CommStats* stats,
                                     bool stream_ordered, DeviceTimings* timed,
                                     CollectiveTicket ticket, SpanUnion* spans)
    : work_(std::move(work)),
      what_(std::move(what)),
      timeout_(timeout),
      stats_(stats),
      stream_ordered_(stream_ordered),
      timed_(timed),
      spans_(spans),
      ticket_(std::move(ticket)) {
  timing_ = std::make_shared<Timing>();
  timing_->issued_ns = NowNs();
  // The completion time tells how long the collective ran while the caller
  // computed; not every Work has a future (then Wait's return time is used).
  // NCCL's future completes when the collective is queued, which says
  // nothing about when it ran.
  if (stream_ordered_) return;
  try {
    if (auto future = work_->getFuture()) {
      std::weak_ptr<Timing> weak = timing_;
      future->addCallback([weak](c10::ivalue::Future&) {
        if (auto t = weak.lock()) t->completed_ns.store(NowNs());
      });
    }
  } catch (const std::exception&) {
  }
}

void PendingCollective::Wait() {
  if (!work_) return;
  auto work = std::move(work_);
  work_.reset();
  // Blocked in this collective until the end of Wait(), as the watchdog sees it.
  InFlightCollectives::Waiting waiting(ticket_.record.get(), ticket_.plane, ticket_.seq, what_);
  const int64_t wait_start = NowNs();
  try {
    if (stream_ordered_) {
      // No timeout: given one, WorkNCCL::wait polls on the host until the
      // collective has finished, and nothing would overlap it.
      work->wait();
    } else {
      // Gloo already enforces the group timeout on the collective itself;
      // the bound here also covers a collective that never started.
      work->wait(timeout_);
    }
  } catch (const std::exception& e) {
    ThrowCollectiveError(what_, e, timeout_);
  }
  const int64_t wait_end = NowNs();
  if (trace_.active()) {
    if (TraceRecorder::Enabled()) {
      // The issuing thread blocked on it: a span on the thread's own track.
      TraceRecorder::Global().Record(
          {"wait: " + trace_.name(), "wait", "compute", wait_start, wait_end, {}});
    }
    const int64_t completed = timing_->completed_ns.load();
    trace_.EndAt(completed > 0 ? std::min(completed, wait_end) : wait_end,
                 {{"bytes", trace_bytes_}});
  }
  if (stats_ != nullptr) {
    if (!stream_ordered_) {
      const int64_t completed = timing_->completed_ns.load();
      const int64_t end = completed > 0 ? std::min(completed, wait_end) : wait_end;
      stats_->busy_seconds += 1e-9 * static_cast<double>(end - timing_->issued_ns);
      if (spans_ != nullptr) {
        spans_->Add(timing_->issued_ns, end);
        stats_->span_union_seconds = spans_->Seconds();
      }
    }
    stats_->wait_seconds += 1e-9 * static_cast<double>(wait_end - wait_start);
  }
  if (timed_ != nullptr) timed_->Add(std::move(work));
}

void PendingCollective::TraceAs(const char* kind, const std::string& what, int64_t bytes) {
  if (!work_ || !TraceRecorder::Active()) return;
  trace_.BeginAt(timing_->issued_ns, what, "collective", kind);
  trace_bytes_ = bytes;
}

void DeviceTimings::Add(c10::intrusive_ptr<c10d::Work> work) {
  any_ = true;
  held_.push_back(std::move(work));
  if (Harvest() <= kMaxHeld) return;
  // The device is far behind the host: let the oldest go untimed rather
  // than hold its buffers or block the host on it.
  held_.erase(held_.begin());
  all_timed_ = false;
}

size_t DeviceTimings::Harvest() {
  auto read = [this](const c10::intrusive_ptr<c10d::Work>& work) {
    bool completed = false;
    try {
      completed = work->isCompleted();
    } catch (const std::exception&) {
      completed = true;  // failed: nothing to time, and Wait() reported it
    }
    if (!completed) return false;
    const double s = DeviceDurationSeconds(*work);
    if (s < 0) all_timed_ = false;
    seconds_ += std::max(0.0, s);
    return true;
  };
  held_.erase(std::remove_if(held_.begin(), held_.end(), read), held_.end());
  return held_.size();
}

double DeviceTimings::Finish() {
  if (Harvest() > 0) all_timed_ = false;  // still running: the device did not synchronise
  held_.clear();
  return any_ && all_timed_ ? seconds_ : -1;
}

void DeviceTimings::Reset() {
  held_.clear();
  seconds_ = 0;
  all_timed_ = true;
  any_ = false;
}

void Communicator::CollectDeviceTimings() {
  const double seconds = device_timings_.Finish();
  if (seconds >= 0) stats_.busy_seconds = seconds;
  device_timings_.Reset();
}

at::Tensor PendingReduceScatter::Wait() {
  if (!pending_) throw FailedPrecondition("PendingReduceScatter::Wait: nothing in flight");
  pending_ = false;
  collective_.Wait();
  at::Tensor result;
  const int64_t k = input_.numel() / world_size_;
  if (local_) {
    result = input_;  // no group: the sum over one rank
  } else if (impl_ == ReduceScatterImpl::kAllToAll) {
    // output_ holds every rank's chunk `rank`: their sum is this rank's slice.
    result = output_.view({world_size_, k}).sum(0);
  } else if (impl_ == ReduceScatterImpl::kAllReduce) {
    result = output_.narrow(0, rank_ * k, k);
  } else {
    result = output_;
  }
  input_ = at::Tensor();
  output_ = at::Tensor();
  return result;
}

Communicator::Communicator(GroupPtr group, int rank, int world_size,
                           std::chrono::milliseconds timeout, GroupPtr control)
    : group_(std::move(group)),
      control_(std::move(control)),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout) {
  if (world_size_ > 1 && !group_) {
    throw InvalidArgument("Communicator: world_size > 1 needs a group");
  }
  stream_ordered_ = group_ && WaitsOnStreams(*group_);
  flat_all_gather_ = group_ && HasFlatAllGather(*group_);
  if (group_ && !control_) {
    if (BackendName(*group_) != "gloo") {
      throw InvalidArgument("Communicator: a " + BackendName(*group_) +
                            " group needs a Gloo control group for CPU tensors");
    }
    control_ = group_;
  }
}

PendingCollective Communicator::Pending(c10::intrusive_ptr<c10d::Work> work,
                                        const std::string& what) {
  return PendingCollective(std::move(work), Context(what), timeout_, &stats_, stream_ordered_,
                           Timed(), Ticket(CollectivePlane::kData), &spans_);
}

CollectiveTicket Communicator::Ticket(CollectivePlane plane) {
  if (plane == CollectivePlane::kControl && control_ == group_) plane = CollectivePlane::kData;
  return {in_flight_, plane, in_flight_->Issue(plane)};
}

std::string Communicator::backend() const { return group_ ? BackendName(*group_) : "none"; }

ReduceScatterImpl Communicator::Resolve(ReduceScatterImpl impl) const {
  if (impl != ReduceScatterImpl::kAuto) return impl;
  if (!group_) return ReduceScatterImpl::kNative;
  return HasNativeReduceScatter(*group_) ? ReduceScatterImpl::kNative
                                         : ReduceScatterImpl::kAllToAll;
}

void Communicator::CheckReducible(const at::Tensor& t, const std::string& what) const {
  if (group_ && t.scalar_type() == at::kBFloat16 && !CanSumBFloat16(*group_)) {
    throw InvalidArgument(Context(what) + ": " + BackendName(*group_) + " in " +
                          TorchBuildDescription() +
                          " cannot sum bfloat16; use a float32 reduce_dtype");
  }
}

std::string Communicator::Context(const std::string& what) const {
  return "rank " + std::to_string(rank_) + "/" + std::to_string(world_size_) + ": " + what;
}

PendingCollective Communicator::AllGather(const at::Tensor& shard, const at::Tensor& full,
                                          const std::string& what) {
  const int64_t k = shard.numel();
  TORCH_CHECK(full.numel() == k * world_size_ && full.is_contiguous(), "AllGather: bad output");
  if (!group_) {
    full.copy_(shard.reshape(-1));
    return {};
  }
  // Gloo in 1.13 has no bfloat16 ("Invalid scalar type"); an all-gather
  // only moves bytes, so move bf16 as the other 2-byte float.
  const bool as_half = shard.scalar_type() == at::kBFloat16 && !CanMoveBFloat16(*group_);
  at::Tensor out = as_half ? full.view(at::kHalf) : full;
  at::Tensor in = shard.reshape(-1).contiguous();
  if (as_half) in = in.view(at::kHalf);
  stats_.bytes_sent += (world_size_ - 1) * k * shard.element_size();
  stats_.collectives += 1;
  try {
    c10::intrusive_ptr<c10d::Work> work;
    if (flat_all_gather_) {
      work = group_->_allgather_base(out, in);
    } else {
      // LibTorch 1.13's Gloo: the list form, into views of `full`.
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int r = 0; r < world_size_; ++r) outputs[0].push_back(out.narrow(0, r * k, k));
      std::vector<at::Tensor> inputs{in};
      work = group_->allgather(outputs, inputs);
    }
    PendingCollective p = Pending(std::move(work), what);
    p.TraceAs("all-gather", what, static_cast<int64_t>(full.nbytes()));
    return p;
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

PendingReduceScatter Communicator::ReduceScatterSumAsync(const at::Tensor& full,
                                                         ReduceScatterImpl impl,
                                                         const std::string& what) {
  TORCH_CHECK(full.numel() % world_size_ == 0, "ReduceScatterSum: numel not divisible");
  CheckReducible(full, what);
  impl = Resolve(impl);
  const int64_t k = full.numel() / world_size_;
  PendingReduceScatter p;
  p.impl_ = impl;
  p.world_size_ = world_size_;
  p.rank_ = rank_;
  p.input_ = full.reshape(-1).contiguous();
  p.pending_ = true;
  if (!group_) {
    p.local_ = true;
    return p;  // Wait() returns the input: the sum over one rank
  }
  const std::string context = Context(what);
  if (impl == ReduceScatterImpl::kNative && !HasNativeReduceScatter(*group_)) {
    throw InvalidArgument(context + ": " + BackendName(*group_) + " in " + TorchBuildDescription() +
                          " has no reduce_scatter; use alltoall or allreduce");
  }
  stats_.collectives += 1;
  try {
    if (impl == ReduceScatterImpl::kAllToAll) {
      // Chunk r of the input goes to rank r; this rank receives every rank's
      // chunk `rank_` and sums them: (N-1)/N of the buffer on the wire, the
      // same as a ring reduce-scatter.
      p.output_ = at::empty_like(p.input_);
      std::vector<int64_t> equal_splits;  // empty = equal splits
      stats_.bytes_sent += (world_size_ - 1) * k * p.input_.element_size();
      p.collective_ =
          Pending(group_->alltoall_base(p.output_, p.input_, equal_splits, equal_splits), what);
    } else if (impl == ReduceScatterImpl::kNative) {
      p.output_ = at::empty({k}, p.input_.options());
      stats_.bytes_sent += (world_size_ - 1) * k * p.input_.element_size();
      p.collective_ = Pending(group_->_reduce_scatter_base(p.output_, p.input_), what);
    } else {
      stats_.bytes_sent += 2 * (world_size_ - 1) * k * p.input_.element_size();
      p.output_ = p.input_.clone();
      std::vector<at::Tensor> tensors{p.output_};
      p.collective_ = Pending(group_->allreduce(tensors), what);
    }
    p.collective_.TraceAs("reduce-scatter", what, static_cast<int64_t>(p.input_.nbytes()));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(context, e, timeout_);
  }
  return p;
}

at::Tensor Communicator::ReduceScatterSum(const at::Tensor& full, ReduceScatterImpl impl,
                                          const std::string& what) {
  return ReduceScatterSumAsync(full, impl, what).Wait();
}

PendingCollective Communicator::AllReduceSum(at::Tensor tensor, const std::string& what) {
  if (!group_) return {};
  TORCH_CHECK(tensor.is_contiguous(), "AllReduceSum: tensor must be contiguous");
  CheckReducible(tensor, what);
  stats_.bytes_sent += 2 * (world_size_ - 1) * tensor.numel() * tensor.element_size() / world_size_;
  stats_.collectives += 1;
  std::vector<at::Tensor> tensors{std::move(tensor)};
  try {
    PendingCollective p = Pending(group_->allreduce(tensors), what);
    p.TraceAs("all-reduce", what, static_cast<int64_t>(tensors[0].nbytes()));
    return p;
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

void Communicator::ControlAllReduceSum(at::Tensor tensor, const std::string& what) {
  if (!control_) return;
  TORCH_CHECK(tensor.is_contiguous() && tensor.device().is_cpu(),
              "ControlAllReduceSum: tensor must be a contiguous CPU tensor");
  std::vector<at::Tensor> tensors{std::move(tensor)};
  try {
    // Not counted in stats(): those describe the training collectives.
    PendingCollective(control_->allreduce(tensors), Context(what), timeout_, nullptr,
                      /*stream_ordered=*/false, nullptr, Ticket(CollectivePlane::kControl))
        .Wait();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

}  // namespace rlswarm::learner
