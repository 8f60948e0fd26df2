// The worker side of CudaPrimitivesTest (harness.h): the GPU path's
// building blocks on one GPU, each checked against what a CPU can compute,
// and the host time of the calls that must not wait for the device. In a
// build without CUDA the scenarios throw (the test skips before that).

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>

#ifdef RLSWARM_WITH_CUDA
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "common/dtype.h"
#include "common/errors.h"
#include "learner/apex/device_copies.h"
#include "learner/dist/memory_peak.h"
#include "learner/dist/rendezvous.h"
#include "learner/dist/torch_adapter.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

void SyncDevice(const at::Device& device) {
#ifdef RLSWARM_WITH_CUDA
  if (!device.is_cuda()) return;
  const c10::DeviceGuard guard(device);
  c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

#ifdef RLSWARM_WITH_CUDA
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Queues a kernel that spins for about `ms` on the current stream, from the
// clock rate measured once on this GPU.
class BusyKernel {
 public:
  explicit BusyKernel(const at::Device& device) : device_(device) {
    constexpr int64_t kCalibrationCycles = 20'000'000;
    SyncDevice(device_);
    const auto start = Clock::now();
    at::cuda::sleep(kCalibrationCycles);
    SyncDevice(device_);
    cycles_per_ms_ = static_cast<double>(kCalibrationCycles) / std::max(MsSince(start), 1e-3);
  }
  void Queue(double ms) const { at::cuda::sleep(static_cast<int64_t>(ms * cycles_per_ms_)); }

 private:
  at::Device device_;
  double cycles_per_ms_ = 1e6;
};

bool Same(const at::Tensor& a, const at::Tensor& b) { return at::equal(a.cpu(), b.cpu()); }

// Release, re-allocate, take and adopt the storage of a CUDA tensor, as the
// gathered units do every update: the device and the data written through
// the storage must survive each step.
std::string CheckStorage(const at::Device& device) {
  const at::TensorOptions options = at::TensorOptions().dtype(at::kFloat).device(device);
  at::Tensor t = at::arange(4096, options);
  const size_t nbytes = t.nbytes();
  at::Tensor view = t.narrow(0, 10, 100);  // as autograd's saved views
  ReleaseStorage(t);
  if (t.storage().nbytes() != 0) return "release_left_bytes";
  ReallocateStorage(t, nbytes);
  if (t.storage().device() != device || t.storage().data_ptr().device() != device) {
    return "reallocated_on_" + t.storage().data_ptr().device().str();
  }
  t.copy_(at::arange(4096, options) * 2);
  if (!Same(view, at::arange(10, 110, at::kFloat) * 2)) return "view_lost_data";
  at::Tensor other = at::empty({4096}, options);
  ReleaseStorage(other);
  AdoptStorage(other, TakeStorage(t), nbytes);
  if (t.storage().nbytes() != 0) return "take_left_bytes";
  if (other.storage().data_ptr().device() != device) return "adopted_off_device";
  if (!Same(other, at::arange(4096, at::kFloat) * 2)) return "adopt_lost_data";
  return "ok";
}

replay::SampledBatch HostBatch(int64_t batch, int64_t width) {
  replay::SampledBatch b;
  for (int64_t i = 0; i < batch; ++i) b.keys.push_back(static_cast<uint64_t>(i));
  b.weights.assign(static_cast<size_t>(batch), 0.5);
  replay::SampledField f;
  f.name = "obs";
  f.dtype = DType::kFloat32;
  f.shape = {batch, width};
  f.num_bytes = static_cast<size_t>(batch * width) * sizeof(float);
  f.data = std::shared_ptr<std::byte[]>(new std::byte[f.num_bytes]);
  auto* v = reinterpret_cast<float*>(f.data.get());
  for (int64_t i = 0; i < batch * width; ++i) v[i] = static_cast<float>(i % 97);
  b.fields.push_back(std::move(f));
  return b;
}

}  // namespace

void RunCudaPrimitivesScenario(const ProcessGroupHandle& pg, const std::string& dir) {
  const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(pg.local_rank));
  SetThreadDevice(device);
  std::shared_ptr<Communicator> comm = pg.MakeCommunicator();
  comm->set_collect_device_timings(true);
  CheckCollectives(*comm, dir, device);
  std::ofstream out(dir + "/cuda_primitives.txt");
  out << "storage " << CheckStorage(device) << "\n";

  const BusyKernel busy(device);
  const at::TensorOptions options = at::TensorOptions().dtype(at::kFloat).device(device);
  {
    // A collective queued behind a ~50 ms kernel: Wait() orders the streams
    // and returns; the host blocks only until the device is synchronised.
    at::Tensor x = at::ones({1 << 16}, options);
    SyncDevice(device);
    const auto start = Clock::now();
    busy.Queue(50);
    PendingCollective all_reduce = comm->AllReduceSum(x, "all-reduce behind a kernel");
    const auto waited = Clock::now();
    all_reduce.Wait();
    out << "wait_host_ms " << MsSince(waited) << "\n";
    SyncDevice(device);
    out << "kernel_ms " << MsSince(start) << "\n";
    out << "wait_result " << (Same(x, at::ones({1 << 16})) ? "ok" : "wrong") << "\n";
  }
  {
    // Staging: the copy runs on the stager's own stream, beside compute.
    const BatchStager stager(device);
    stager.MakeReady(stager.Stage(HostBatch(64, 100)));  // pinned pools warmed up
    SyncDevice(device);
    busy.Queue(50);
    const auto start = Clock::now();
    StagedBatch staged = stager.Stage(HostBatch(512, 400));
    out << "stage_host_ms " << MsSince(start) << "\n";
    stager.MakeReady(staged);
    const at::Tensor expected = at::arange(512 * 400, at::kFloat).remainder(97).view({512, 400});
    out << "stage_data " << (Same(staged.Field("obs"), expected) ? "ok" : "wrong") << "\n";
  }
  {
    // A snapshot for publishing: queued after the work on the compute
    // stream, without the host waiting for it.
    at::Tensor source = at::arange(1 << 20, options);
    CopyToHostAsync(source).Wait();  // pinned pools warmed up
    SyncDevice(device);
    busy.Queue(50);
    source.mul_(3);  // ordered behind the busy kernel, before the copy
    const auto start = Clock::now();
    HostCopy copy = CopyToHostAsync(source);
    out << "copy_host_ms " << MsSince(start) << "\n";
    copy.Wait();
    out << "copy_data "
        << (at::equal(copy.host, at::arange(1 << 20, at::kFloat) * 3) ? "ok" : "wrong") << "\n";
  }
}

void RunMeterFirstScenario(const std::string& dir) {
  const at::Device device(at::kCUDA, 0);
  PeakMemoryMeter meter(device);  // the process's first CUDA call
  at::Tensor block = at::ones({64 << 20}, at::TensorOptions().dtype(at::kByte).device(device));
  std::ofstream(dir + "/meter_first.txt")
      << "meter_first " << meter.PeakBytesAboveBaseline() << "\n";
}

#else

void RunCudaPrimitivesScenario(const ProcessGroupHandle&, const std::string&) {
  throw FailedPrecondition("cuda_primitives: " + TorchBuildDescription() + " has no CUDA");
}

void RunMeterFirstScenario(const std::string&) {
  throw FailedPrecondition("meter_first: " + TorchBuildDescription() + " has no CUDA");
}

#endif

}  // namespace rlswarm::learner::testing
