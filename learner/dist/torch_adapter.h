#pragma once

// The one place that knows which LibTorch the learner is built against.
//
// rlswarm builds against two LibTorch releases from one tree: Debian's 1.13
// (CPU only, the default build) and PyPI's 2.x wheel (CUDA + NCCL, the GPU
// build). What differs between them for the learner lives here and nowhere
// else:
//  - the type that carries collectives: in 1.13 ProcessGroupGloo is a
//    c10d::ProcessGroup; in 2.x Gloo and NCCL are c10d::Backends (a 2.x
//    ProcessGroup is only a dispatcher over backends by device type, and we
//    issue collectives on the backend directly);
//  - process-group construction (Gloo options, NCCL, which exists only in a
//    CUDA build);
//  - what each backend can do: Gloo in 1.13 has no reduce-scatter and cannot
//    sum bfloat16; Gloo in 2.x has `_reduce_scatter_base`;
//  - the storage trick that frees a gathered buffer in place and re-allocates
//    it under the views autograd saved (StorageImpl internals).
// Nothing here blocks except group construction, which waits for every rank
// (bounded by the timeout given).

#include <ATen/core/Tensor.h>
#include <torch/csrc/api/include/torch/version.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace rlswarm::learner {

#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif
using GroupPtr = c10::intrusive_ptr<CollectiveGroup>;

// "LibTorch 1.13.1 (CPU)" or "LibTorch 2.11.0 (CUDA 13.0)".
std::string TorchBuildDescription();
// True when this binary was built against a CUDA LibTorch (RLSWARM_WITH_CUDA).
bool BuiltWithCuda();
// GPUs this process sees; 0 on a CPU build or a machine without a GPU.
int CudaDeviceCount();

// A Gloo group over `store` (CPU tensors). `hostname` is the address Gloo
// binds and announces for its pair connections; empty = this host's name.
// A subgroup is the same call over a c10d::PrefixStore of the world's store
// with the rank and size within the group: Gloo's rendezvous only exchanges
// the members' addresses under that prefix, so each rank builds only the
// groups it is in.
GroupPtr MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                       std::chrono::milliseconds timeout, const std::string& hostname);
// An NCCL group over `store` for tensors on cuda:`device_index`. Throws
// InvalidArgument on a build without CUDA. NCCL communicators start lazily
// (at the first collective), so success here does not prove that every rank
// can run one. A subgroup (hybrid_shard's planes) is the same construction
// over a PrefixStore with the rank and size within the group; `global_ranks`
// (the members' world ranks) then goes into the options where the release
// has them (2.x), for NCCL's logs and flight recorder.
GroupPtr MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
                       std::chrono::milliseconds timeout, int device_index,
                       const std::vector<int64_t>& global_ranks = {});

// "gloo" or "nccl".
std::string BackendName(const CollectiveGroup& group);
// The backend's own reduce-scatter (`_reduce_scatter_base`) exists: NCCL,
// and Gloo from LibTorch 2.x on.
bool HasNativeReduceScatter(const CollectiveGroup& group);
// The backend can sum bfloat16 tensors (not Gloo in 1.13).
bool CanSumBFloat16(const CollectiveGroup& group);
// The backend can move bfloat16 tensors (Gloo in 1.13 cannot: an all-gather
// then moves them as half, the same bytes).
bool CanMoveBFloat16(const CollectiveGroup& group);
// The backend gathers into one flat buffer (`_allgather_base`): NCCL, and
// Gloo from LibTorch 2.x on (which runs its list form over the buffer's
// chunks; 1.13's Gloo throws). The list form (`allgather` into N views)
// makes NCCL gather into a fresh flat buffer of its own and copy it into
// the views: twice the unit's memory and a device copy per all-gather.
bool HasFlatAllGather(const CollectiveGroup& group);
// Waiting for the backend's work orders streams instead of blocking the
// host (NCCL): Work::wait() makes the current CUDA stream wait for the
// collective's stream and returns. Given a timeout, LibTorch 2.x's
// WorkNCCL::wait instead polls on the host (1 ms sleeps) until the
// collective has finished, so such a group is waited on without one; the
// group's own timeout (NCCL's watchdog) bounds a collective there.
bool WaitsOnStreams(const CollectiveGroup& group);

// How long a completed collective ran on its device, from the backend's own
// CUDA events (NCCL in LibTorch 2.x, with TORCH_NCCL_ENABLE_TIMING=1); a
// negative value where the backend or the release does not time its work.
double DeviceDurationSeconds(const c10d::Work& work);

// Makes `device` the calling thread's current CUDA device (a no-op for the
// CPU and in builds without CUDA). CUDA's current device is per thread and
// starts as cuda:0: every thread that allocates or launches for a rank on
// cuda:N without naming the device (the caching allocator's raw allocate,
// pinned host memory, device-wide synchronisation) must set it first.
void SetThreadDevice(const at::Device& device);

// Frees the memory behind `tensor`'s storage in place: every view of it
// (those autograd saved included) stays valid and sees 0 bytes until
// ReallocateStorage. `resize_(0)` on an alias would not free it.
void ReleaseStorage(const at::Tensor& tensor);
// Gives a released storage `nbytes` of fresh memory from its own allocator
// (the CUDA caching allocator for a CUDA tensor), on the storage's own
// device whatever the calling thread's current device (an autograd device
// thread, the training thread).
void ReallocateStorage(const at::Tensor& tensor, size_t nbytes);
// ReleaseStorage that hands the memory to the caller instead of freeing it,
// to give to another released storage with AdoptStorage: buffers that are
// gathered and freed every update then never go back to malloc, whose heap
// otherwise grows by about one buffer per re-allocation (posix_memalign
// cannot reuse a freed hole of exactly its size).
c10::DataPtr TakeStorage(const at::Tensor& tensor);
// Puts `data` (`nbytes`, from TakeStorage of a tensor on the same device)
// behind `tensor`'s storage, in place of what it holds.
void AdoptStorage(const at::Tensor& tensor, c10::DataPtr data, size_t nbytes);

}  // namespace rlswarm::learner
