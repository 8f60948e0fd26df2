#include "learner/dist/torch_adapter.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/api/include/torch/cuda.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef RLSWARM_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "common/errors.h"

namespace rlswarm::learner {

std::string TorchBuildDescription() {
  std::string text = "LibTorch " + std::string(TORCH_VERSION);
#ifdef RLSWARM_WITH_CUDA
  text += " (CUDA)";
#else
  text += " (CPU)";
#endif
  return text;
}

bool BuiltWithCuda() {
#ifdef RLSWARM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount() {
#ifdef RLSWARM_WITH_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

GroupPtr MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                       std::chrono::milliseconds timeout, const std::string& hostname) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(hostname.empty()
                                 ? c10d::ProcessGroupGloo::createDefaultDevice()
                                 : c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  // Two threads: one can run a prefetched all-gather while the other
  // finishes the collective before it.
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

GroupPtr MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                       std::chrono::milliseconds timeout, int device_index,
                       const std::vector<int64_t>& global_ranks) {
#ifdef RLSWARM_WITH_CUDA
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
#if TORCH_VERSION_MAJOR >= 2
  options->global_ranks_in_group.assign(global_ranks.begin(), global_ranks.end());
#else
  (void)global_ranks;
#endif
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#if TORCH_VERSION_MAJOR >= 2
  // Binding the device lets NCCL create its communicator for that device
  // only (and eagerly where the release supports it), instead of guessing
  // the device from the first tensor it sees.
  group->setBoundDeviceId(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)));
#else
  (void)device_index;
#endif
  return group;
#else
  (void)store, (void)rank, (void)world_size, (void)timeout, (void)device_index, (void)global_ranks;
  throw InvalidArgument("NCCL needs a CUDA build of rlswarm (" + TorchBuildDescription() +
                        "): build with scripts/build.sh --torch=pypi");
#endif
}

std::string BackendName(const CollectiveGroup& group) { return group.getBackendName(); }

bool HasNativeReduceScatter(const CollectiveGroup& group) {
  if (BackendName(group) == "nccl") return true;
  return TORCH_VERSION_MAJOR >= 2;
}

bool CanSumBFloat16(const CollectiveGroup& group) {
  if (BackendName(group) == "nccl") return true;
  return TORCH_VERSION_MAJOR >= 2;
}

bool CanMoveBFloat16(const CollectiveGroup& group) { return CanSumBFloat16(group); }

bool HasFlatAllGather(const CollectiveGroup& group) {
  if (BackendName(group) == "nccl") return true;
  return TORCH_VERSION_MAJOR >= 2;
}

bool WaitsOnStreams(const CollectiveGroup& group) { return BackendName(group) == "nccl"; }

void SetThreadDevice(const at::Device& device) {
#ifdef RLSWARM_WITH_CUDA
  if (device.is_cuda() && device.has_index()) c10::cuda::set_device(device.index());
#else
  (void)device;
#endif
}

double DeviceDurationSeconds(const c10d::Work& work) {
#if TORCH_VERSION_MAJOR >= 2
  try {
    return 1e-3 * static_cast<double>(work.getDuration());
  } catch (const std::exception&) {
    return -1;
  }
#else
  (void)work;
  return -1;
#endif
}

void ReleaseStorage(const at::Tensor& tensor) { tensor.storage().unsafeGetStorageImpl()->reset(); }

void ReallocateStorage(const at::Tensor& tensor, size_t nbytes) {
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  // The CUDA caching allocator's allocate() serves the calling thread's
  // current device, not the storage's.
  const c10::DeviceGuard guard(impl->device());
  impl->set_data_ptr_noswap(impl->allocator()->allocate(nbytes));
  impl->set_nbytes(nbytes);
}

c10::DataPtr TakeStorage(const at::Tensor& tensor) {
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  c10::DataPtr data = impl->set_data_ptr(c10::DataPtr(nullptr, impl->device()));
  impl->set_nbytes(0);
  return data;
}

void AdoptStorage(const at::Tensor& tensor, c10::DataPtr data, size_t nbytes) {
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(std::move(data));
  impl->set_nbytes(nbytes);
}

}  // namespace rlswarm::learner
