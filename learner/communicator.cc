#include "learner/communicator.h"

#include <ATen/ATen.h>

#include <atomic>

#include "common/errors.h"
#include "learner/collective_errors.h"

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
                                     std::vector<c10::intrusive_ptr<c10d::Work>>* timed,
                                     CollectiveTicket ticket)
    : work_(std::move(work)),
      what_(std::move(what)),
      timeout_(timeout),
      stats_(stats),
      timed_(timed),
      ticket_(std::move(ticket)) {
  timing_ = std::make_shared<Timing>();
  timing_->issued_ns = NowNs();
  // The completion time tells how long the collective ran while the caller
  // computed; not every Work has a future (then Wait's return time is used).
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
    // Gloo already enforces the group timeout on the collective itself; the
    // bound here also covers a collective that never started.
    work->wait(timeout_);
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
    const int64_t completed = timing_->completed_ns.load();
    const int64_t end = completed > 0 ? std::min(completed, wait_end) : wait_end;
    stats_->busy_seconds += 1e-9 * static_cast<double>(end - timing_->issued_ns);
    stats_->wait_seconds += 1e-9 * static_cast<double>(wait_end - wait_start);
  }
  if (timed_ != nullptr) timed_->push_back(std::move(work));
}

void PendingCollective::TraceAs(const char* kind, const std::string& what, int64_t bytes) {
  if (!work_ || !TraceRecorder::Active()) return;
  trace_.BeginAt(timing_->issued_ns, what, "collective", kind);
  trace_bytes_ = bytes;
}

void Communicator::CollectDeviceTimings() {
  if (timed_works_.empty()) return;
  double seconds = 0;
  bool all_timed = true;
  for (const auto& work : timed_works_) {
    const double s = DeviceDurationSeconds(*work);
    if (s < 0) all_timed = false;
    seconds += std::max(0.0, s);
  }
  timed_works_.clear();
  if (all_timed) stats_.busy_seconds = seconds;
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
  if (group_ && !control_) {
    if (BackendName(*group_) != "gloo") {
      throw InvalidArgument("Communicator: a " + BackendName(*group_) +
                            " group needs a Gloo control group for CPU tensors");
    }
    control_ = group_;
  }
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
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < world_size_; ++r) outputs[0].push_back(out.narrow(0, r * k, k));
  at::Tensor in = shard.reshape(-1).contiguous();
  std::vector<at::Tensor> inputs{as_half ? in.view(at::kHalf) : in};
  stats_.bytes_sent += (world_size_ - 1) * k * shard.element_size();
  stats_.collectives += 1;
  try {
    PendingCollective p(group_->allgather(outputs, inputs), Context(what), timeout_, &stats_,
                        Timed(), Ticket(CollectivePlane::kData));
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
          PendingCollective(group_->alltoall_base(p.output_, p.input_, equal_splits, equal_splits),
                            context, timeout_, &stats_, Timed(), Ticket(CollectivePlane::kData));
    } else if (impl == ReduceScatterImpl::kNative) {
      p.output_ = at::empty({k}, p.input_.options());
      stats_.bytes_sent += (world_size_ - 1) * k * p.input_.element_size();
      p.collective_ = PendingCollective(group_->_reduce_scatter_base(p.output_, p.input_), context,
                                        timeout_, &stats_, Timed(), Ticket(CollectivePlane::kData));
    } else {
      stats_.bytes_sent += 2 * (world_size_ - 1) * k * p.input_.element_size();
      p.output_ = p.input_.clone();
      std::vector<at::Tensor> tensors{p.output_};
      p.collective_ = PendingCollective(group_->allreduce(tensors), context, timeout_, &stats_,
                                        Timed(), Ticket(CollectivePlane::kData));
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
    PendingCollective p(group_->allreduce(tensors), Context(what), timeout_, &stats_, Timed(),
                        Ticket(CollectivePlane::kData));
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
    PendingCollective(control_->allreduce(tensors), Context(what), timeout_, nullptr, nullptr,
                      Ticket(CollectivePlane::kControl))
        .Wait();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

}  // namespace rlswarm::learner
