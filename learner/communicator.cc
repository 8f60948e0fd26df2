#include "learner/communicator.h"

#include <ATen/ATen.h>

#include "common/errors.h"
#include "learner/collective_errors.h"

namespace rlswarm::learner {

PendingCollective::PendingCollective(c10::intrusive_ptr<c10d::Work> work, std::string what,
                                     std::chrono::milliseconds timeout)
    : work_(std::move(work)), what_(std::move(what)), timeout_(timeout) {}

void PendingCollective::Wait() {
  if (!work_) return;
  auto work = std::move(work_);
  work_.reset();
  try {
    // Gloo already enforces the group timeout on the collective itself; the
    // bound here also covers a collective that never started.
    work->wait(timeout_);
  } catch (const std::exception& e) {
    ThrowCollectiveError(what_, e, timeout_);
  }
}

Communicator::Communicator(c10::intrusive_ptr<c10d::ProcessGroup> group, int rank, int world_size,
                           std::chrono::milliseconds timeout)
    : group_(std::move(group)), rank_(rank), world_size_(world_size), timeout_(timeout) {
  if (world_size_ > 1 && !group_)
    throw InvalidArgument("Communicator: world_size > 1 needs a group");
}

void Communicator::CheckReducible(const at::Tensor& t, const std::string& what) const {
  if (world_size_ > 1 && t.scalar_type() == at::kBFloat16 && group_->getBackendName() == "gloo") {
    throw InvalidArgument(Context(what) + ": Gloo cannot sum bfloat16; use a float32 reduce_dtype");
  }
}

std::string Communicator::Context(const std::string& what) const {
  return "rank " + std::to_string(rank_) + "/" + std::to_string(world_size_) + ": " + what;
}

PendingCollective Communicator::AllGather(const at::Tensor& shard, const at::Tensor& full,
                                          const std::string& what) {
  const int64_t k = shard.numel();
  TORCH_CHECK(full.numel() == k * world_size_ && full.is_contiguous(), "AllGather: bad output");
  if (world_size_ == 1) {
    full.copy_(shard.reshape(-1));
    return {};
  }
  // Gloo in 1.13 has no bfloat16 ("Invalid scalar type"); an all-gather
  // only moves bytes, so move bf16 as the other 2-byte float.
  const bool as_half = shard.scalar_type() == at::kBFloat16;
  at::Tensor out = as_half ? full.view(at::kHalf) : full;
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < world_size_; ++r) outputs[0].push_back(out.narrow(0, r * k, k));
  at::Tensor in = shard.reshape(-1).contiguous();
  std::vector<at::Tensor> inputs{as_half ? in.view(at::kHalf) : in};
  stats_.bytes_sent += (world_size_ - 1) * k * shard.element_size();
  stats_.collectives += 1;
  try {
    return PendingCollective(group_->allgather(outputs, inputs), Context(what), timeout_);
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

at::Tensor Communicator::ReduceScatterSum(const at::Tensor& full, ReduceScatterImpl impl,
                                          const std::string& what) {
  TORCH_CHECK(full.numel() % world_size_ == 0, "ReduceScatterSum: numel not divisible");
  CheckReducible(full, what);
  const int64_t k = full.numel() / world_size_;
  at::Tensor input = full.reshape(-1).contiguous();
  if (world_size_ == 1) return input;
  stats_.collectives += 1;
  const std::string context = Context(what);
  try {
    if (impl == ReduceScatterImpl::kAllToAll) {
      // Chunk r of the input goes to rank r; this rank receives every rank's
      // chunk `rank_` and sums them: (N-1)/N of the buffer on the wire, the
      // same as a ring reduce-scatter.
      at::Tensor received = at::empty_like(input);
      std::vector<int64_t> equal_splits;  // empty = equal splits
      stats_.bytes_sent += (world_size_ - 1) * k * input.element_size();
      PendingCollective(group_->alltoall_base(received, input, equal_splits, equal_splits), context,
                        timeout_)
          .Wait();
      return received.view({world_size_, k}).sum(0);
    }
    if (impl == ReduceScatterImpl::kNative) {
      if (group_->getBackendName() == "gloo") {
        throw InvalidArgument(context + ": Gloo has no reduce_scatter; use alltoall or allreduce");
      }
      at::Tensor output = at::empty({k}, input.options());
      stats_.bytes_sent += (world_size_ - 1) * k * input.element_size();
      PendingCollective(group_->_reduce_scatter_base(output, input), context, timeout_).Wait();
      return output;
    }
    stats_.bytes_sent += 2 * (world_size_ - 1) * k * input.element_size();
    std::vector<at::Tensor> tensors{input.clone()};
    PendingCollective(group_->allreduce(tensors), context, timeout_).Wait();
    return tensors[0].narrow(0, rank_ * k, k);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(context, e, timeout_);
  }
}

PendingCollective Communicator::AllReduceSum(at::Tensor tensor, const std::string& what) {
  if (world_size_ == 1) return {};
  TORCH_CHECK(tensor.is_contiguous(), "AllReduceSum: tensor must be contiguous");
  CheckReducible(tensor, what);
  stats_.bytes_sent += 2 * (world_size_ - 1) * tensor.numel() * tensor.element_size() / world_size_;
  stats_.collectives += 1;
  std::vector<at::Tensor> tensors{std::move(tensor)};
  try {
    return PendingCollective(group_->allreduce(tensors), Context(what), timeout_);
  } catch (const std::exception& e) {
    ThrowCollectiveError(Context(what), e, timeout_);
  }
}

}  // namespace rlswarm::learner
