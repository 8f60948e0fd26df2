#include "learner/dist/device_plan.h"

#include <ATen/ATen.h>

#include <functional>

#include "common/errors.h"
#include "learner/dist/torch_adapter.h"

namespace rlswarm::learner {

DevicePlan PlanDevice(const DeviceRequest& request, const DeviceInventory& inventory) {
  const std::string& device = request.device;
  const std::string& backend = request.backend;
  if (device != "auto" && device != "cpu" && device != "cuda") {
    throw InvalidArgument("learner.device='" + device + "': expected auto, cpu or cuda");
  }
  if (backend != "auto" && backend != "gloo" && backend != "nccl") {
    throw InvalidArgument("learner.backend='" + backend + "': expected auto, gloo or nccl");
  }
  const bool gpu_available = inventory.built_with_cuda && inventory.cuda_devices > 0;
  bool cuda = device == "cuda" || (device == "auto" && (gpu_available || backend == "nccl"));
  if (cuda && !inventory.built_with_cuda) {
    throw InvalidArgument("learner." +
                          std::string(device == "cuda" ? "device=cuda" : "backend=nccl") +
                          ": this rlswarm is built against " + inventory.build +
                          ", which has no CUDA; build the CUDA flavour with scripts/build.sh "
                          "--torch=pypi, or set learner.device=cpu");
  }
  if (cuda && inventory.cuda_devices == 0) {
    throw InvalidArgument(
        "learner." + std::string(device == "cuda" ? "device=cuda" : "backend=nccl") +
        ": no CUDA device is visible to " + inventory.build +
        " (check nvidia-smi and CUDA_VISIBLE_DEVICES), or set learner.device=cpu");
  }
  if (cuda && request.local_rank >= inventory.cuda_devices) {
    throw InvalidArgument("learner.device=cuda: local rank " + std::to_string(request.local_rank) +
                          " needs cuda:" + std::to_string(request.local_rank) + " but " +
                          std::to_string(inventory.cuda_devices) +
                          " GPU(s) are visible; NCCL runs one rank per GPU, so start at most " +
                          std::to_string(inventory.cuda_devices) + " learner rank(s) on this node");
  }
  DevicePlan plan;
  if (cuda) plan.device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(request.local_rank));
  if (backend == "nccl" && !cuda) {
    throw InvalidArgument(
        "learner.backend=nccl needs learner.device=cuda (NCCL carries CUDA tensors only); "
        "use learner.backend=gloo on the CPU");
  }
  if (backend == "gloo" && cuda) {
    throw InvalidArgument(
        "learner.backend=gloo with learner.device=cuda: Gloo would move every parameter and "
        "gradient through host memory; use learner.backend=nccl (or auto)");
  }
  plan.backend = cuda ? Backend::kNccl : Backend::kGloo;
  plan.needs_group = request.world_size > 1 || backend == "nccl";
  if (device == "auto" && !cuda && inventory.built_with_cuda) {
    plan.fallback =
        "learner.device=auto: training on the CPU because no CUDA device is visible to " +
        inventory.build +
        " (check nvidia-smi and CUDA_VISIBLE_DEVICES); set learner.device=cpu to "
        "silence this, or learner.device=cuda to fail instead";
  }
  return plan;
}

DeviceInventory ThisProcessInventory() {
  DeviceInventory inventory;
  inventory.built_with_cuda = BuiltWithCuda();
  inventory.cuda_devices = CudaDeviceCount();
  inventory.build = TorchBuildDescription();
  return inventory;
}

void CheckDistinctDevices(Communicator& comm, const at::Device& device, const std::string& host) {
  if (!device.is_cuda() || comm.world_size() == 1) return;
  const int n = comm.world_size();
  // Slot r holds rank r's (host hash, device index); the others add zeros,
  // so one sum is an all-gather. 40 bits of host hash leave room for the
  // device index and keep the value exact in an int64 sum.
  const int64_t host_id = static_cast<int64_t>(std::hash<std::string>{}(host) & ((1ll << 40) - 1));
  at::Tensor slots = at::zeros({n}, at::kLong);
  slots[comm.rank()].fill_((host_id << 8) | (device.index() + 1));
  comm.ControlAllReduceSum(slots, "device check");
  const int64_t* v = slots.data_ptr<int64_t>();
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (v[a] == v[b]) {
        throw FailedPrecondition("learner ranks " + std::to_string(a) + " and " +
                                 std::to_string(b) +
                                 " both use cuda:" + std::to_string((v[a] & 0xff) - 1) +
                                 " on one host; NCCL needs one GPU per rank (give each rank its "
                                 "own LOCAL_RANK, e.g. through torchrun or --local-rank)");
      }
    }
  }
}

}  // namespace rlswarm::learner
