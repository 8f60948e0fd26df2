#pragma once

// Where a learner rank computes and which backend carries its collectives,
// decided once at start from what was asked for (learner.device,
// learner.backend), this rank's place (local rank, world size) and what the
// build and the machine offer. Pure: the caller passes in what it read from
// the environment and from LibTorch, so every refusal is testable on a CPU
// machine.

#include <ATen/core/Tensor.h>

#include <string>

#include "learner/dist/communicator.h"
#include "learner/dist/rendezvous.h"

namespace rlswarm::learner {

struct DeviceRequest {
  std::string device = "auto";   // auto | cpu | cuda
  std::string backend = "auto";  // auto | gloo | nccl
  int local_rank = 0;            // torchrun's LOCAL_RANK, Slurm's SLURM_LOCALID
  int world_size = 1;
};

// What the build and the machine offer.
struct DeviceInventory {
  bool built_with_cuda = false;
  int cuda_devices = 0;
  std::string build = "LibTorch";  // TorchBuildDescription(), for messages
};

struct DevicePlan {
  at::Device device = at::kCPU;  // cuda:local_rank on a GPU rank
  Backend backend = Backend::kGloo;
  // A process group is built at world size > 1. One rank trains without
  // one, on the CPU and on a GPU alike (no collective, no copy: plain
  // LibTorch's cost), unless learner.backend=nccl asks for a 1-rank NCCL
  // group, which runs the sharded path through NCCL on a one-GPU node.
  bool needs_group = false;
  // Why learner.device=auto chose the CPU in a build that could have used
  // a GPU (a CUDA build that sees none); empty otherwise. Callers log it
  // as a warning: training on the CPU where a GPU was expected is slow
  // without failing.
  std::string fallback;
};

// auto device: cuda when the build has CUDA and a GPU is visible, else cpu
// (with `fallback` set in a CUDA build); auto backend: nccl on cuda, gloo on
// cpu. Throws InvalidArgument, naming the config key and what to do instead,
// for: cuda on a build without CUDA or a machine without a GPU; a local
// rank with no GPU of its own (NCCL refuses two ranks on one GPU); nccl on
// the CPU; gloo on CUDA; unknown values.
DevicePlan PlanDevice(const DeviceRequest& request, const DeviceInventory& inventory);

// DeviceInventory of this process (BuiltWithCuda, CudaDeviceCount).
DeviceInventory ThisProcessInventory();

// Collective (control plane): every rank tells the others its host and
// device; throws FailedPrecondition on every rank, naming both ranks, when
// two ranks of one host use the same GPU (NCCL would fail at its first
// collective, or hang). A no-op on the CPU and at world size 1.
void CheckDistinctDevices(Communicator& comm, const at::Device& device, const std::string& host);

}  // namespace rlswarm::learner
