#include "learner/apex/device_copies.h"

#include <ATen/ATen.h>

#ifdef RLSWARM_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "common/errors.h"
#include "models/dtype_translation.h"

namespace rlswarm::learner {

#ifdef RLSWARM_WITH_CUDA
struct BatchStager::CudaState {
  c10::cuda::CUDAStream copy_stream;
};
#else
struct BatchStager::CudaState {};
#endif

const at::Tensor& StagedBatch::Field(const std::string& name) const {
  for (const auto& [field_name, tensor] : fields) {
    if (field_name == name) return tensor;
  }
  throw InvalidArgument("learner: sampled batch has no field '" + name + "'");
}

BatchStager::BatchStager(at::Device device) : device_(device) {
#ifdef RLSWARM_WITH_CUDA
  if (device_.is_cuda()) {
    cuda_ = std::make_unique<CudaState>(
        CudaState{c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index())});
  }
#endif
  if (device_.is_cuda() && !cuda_) {
    throw InvalidArgument("BatchStager: " + device_.str() + " needs a CUDA build");
  }
}

BatchStager::~BatchStager() = default;

StagedBatch BatchStager::Stage(replay::SampledBatch batch) const {
  StagedBatch staged;
  staged.host = std::move(batch);
  const replay::SampledBatch& host = staged.host;
  auto view = [](const replay::SampledField& f) {
    return at::from_blob(f.data.get(), f.shape,
                         at::TensorOptions().dtype(models::ToScalarType(f.dtype)));
  };
  at::Tensor weights;
  if (host.weights.size() == static_cast<size_t>(host.size())) {
    weights = at::from_blob(const_cast<double*>(host.weights.data()), {host.size()},
                            at::TensorOptions().dtype(at::kDouble));
  }
  if (!device_.is_cuda()) {
    for (const replay::SampledField& f : host.fields) staged.fields.emplace_back(f.name, view(f));
    staged.weights = weights;
    return staged;
  }
#ifdef RLSWARM_WITH_CUDA
  c10::cuda::CUDAStreamGuard guard(cuda_->copy_stream);
  // Pinned host memory first (a host copy), so that the device copy is a
  // true asynchronous DMA; the caching host allocator keeps each pinned
  // block until the copy that reads it has finished.
  auto to_device = [&](const at::Tensor& t) {
    at::Tensor pinned = at::empty(t.sizes(), t.options().pinned_memory(true));
    pinned.copy_(t);
    return pinned.to(device_, /*non_blocking=*/true);
  };
  for (const replay::SampledField& f : host.fields) {
    staged.fields.emplace_back(f.name, to_device(view(f)));
  }
  if (weights.defined()) staged.weights = to_device(weights);
  auto event = std::make_shared<at::cuda::CUDAEvent>();
  event->record(cuda_->copy_stream);
  staged.copy_done = event;
#endif
  return staged;
}

void BatchStager::MakeReady(const StagedBatch& batch) const {
#ifdef RLSWARM_WITH_CUDA
  if (!batch.copy_done) return;
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
  static_cast<at::cuda::CUDAEvent*>(batch.copy_done.get())->block(compute);
  for (const auto& [name, tensor] : batch.fields) tensor.record_stream(compute);
  if (batch.weights.defined()) batch.weights.record_stream(compute);
#else
  (void)batch;
#endif
}

HostCopy CopyToHostAsync(const at::Tensor& tensor) {
  HostCopy copy;
  if (!tensor.is_cuda()) {
    copy.host = tensor.clone();  // the original changes in place at the next step
    return copy;
  }
#ifdef RLSWARM_WITH_CUDA
  // Pinned memory comes from a CUDA context, created on the calling
  // thread's current device if it has none: the tensor's, not cuda:0.
  const c10::cuda::CUDAGuard guard(tensor.device());
  copy.host = at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(true));
  copy.host.copy_(tensor, /*non_blocking=*/true);
  auto event = std::make_shared<at::cuda::CUDAEvent>();
  event->record(c10::cuda::getCurrentCUDAStream(tensor.device().index()));
  copy.done = event;
#endif
  return copy;
}

void HostCopy::Wait() const {
#ifdef RLSWARM_WITH_CUDA
  if (done) static_cast<at::cuda::CUDAEvent*>(done.get())->synchronize();
#endif
}

}  // namespace rlswarm::learner
