#include "learner/dist/device_plan.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "learner/dist/torch_adapter.h"

namespace rlswarm::learner {
namespace {

DeviceInventory CpuBuild() { return {false, 0, "LibTorch 1.13.1 (CPU)"}; }
DeviceInventory CudaBuild(int gpus) { return {true, gpus, "LibTorch 2.11.0 (CUDA)"}; }

// The message of the InvalidArgument that PlanDevice throws, or "" if none.
std::string Refusal(const DeviceRequest& r, const DeviceInventory& inv) {
  try {
    PlanDevice(r, inv);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DevicePlanTest, AutoIsCpuAndGlooWithoutAGpuAndBuildsAGroupOnlyForSeveralRanks) {
  for (const DeviceInventory& inv : {CpuBuild(), CudaBuild(0)}) {
    DevicePlan one = PlanDevice({"auto", "auto", 0, 1}, inv);
    EXPECT_TRUE(one.device.is_cpu());
    EXPECT_EQ(one.backend, Backend::kGloo);
    EXPECT_FALSE(one.needs_group);
    EXPECT_TRUE(PlanDevice({"auto", "auto", 0, 2}, inv).needs_group);
  }
}

TEST(DevicePlanTest, AutoOnAGpuNodeIsCudaOfTheLocalRankWithNccl) {
  DevicePlan p = PlanDevice({"auto", "auto", 1, 4}, CudaBuild(2));
  EXPECT_EQ(p.device, at::Device(at::kCUDA, 1));
  EXPECT_EQ(p.backend, Backend::kNccl);
  DevicePlan single = PlanDevice({"cuda", "nccl", 0, 1}, CudaBuild(1));
  EXPECT_TRUE(single.needs_group);  // asked for: the NCCL path runs on a one-GPU node
  EXPECT_TRUE(PlanDevice({"cpu", "auto", 0, 2}, CudaBuild(2)).device.is_cpu());
}

// One rank on a GPU trains as one rank on the CPU does: no process group,
// the model's direct path (no collective, no gathered copy). A 1-rank NCCL
// group, which runs the sharded path through NCCL, only when asked for.
TEST(DevicePlanTest, OneRankOnAGpuTrainsWithoutAGroupUnlessNcclIsAskedFor) {
  for (const std::string device : {"auto", "cuda"}) {
    const DevicePlan p = PlanDevice({device, "auto", 0, 1}, CudaBuild(1));
    EXPECT_EQ(p.device, at::Device(at::kCUDA, 0)) << device;
    EXPECT_FALSE(p.needs_group) << device;
    EXPECT_TRUE(p.fallback.empty()) << p.fallback;
  }
  EXPECT_TRUE(PlanDevice({"auto", "nccl", 0, 1}, CudaBuild(1)).needs_group);
  EXPECT_TRUE(PlanDevice({"cuda", "auto", 0, 2}, CudaBuild(2)).needs_group);
}

// learner.device=auto on a CUDA build that sees no GPU trains on the CPU
// and says why (callers log it as a warning); on the CPU build, or when the
// CPU was asked for, there is nothing to explain.
TEST(DevicePlanTest, AutoFallingBackToTheCpuOnACudaBuildSaysWhy) {
  const DevicePlan p = PlanDevice({"auto", "auto", 0, 1}, CudaBuild(0));
  EXPECT_TRUE(p.device.is_cpu());
  EXPECT_TRUE(Has(p.fallback, "learner.device=auto") && Has(p.fallback, "on the CPU") &&
              Has(p.fallback, "no CUDA device is visible") &&
              Has(p.fallback, "CUDA_VISIBLE_DEVICES") && Has(p.fallback, "LibTorch 2.11.0 (CUDA)"))
      << p.fallback;
  EXPECT_TRUE(PlanDevice({"auto", "auto", 0, 1}, CpuBuild()).fallback.empty());
  EXPECT_TRUE(PlanDevice({"cpu", "auto", 0, 1}, CudaBuild(0)).fallback.empty());
  EXPECT_TRUE(PlanDevice({"auto", "auto", 0, 1}, CudaBuild(1)).fallback.empty());
}

TEST(DevicePlanTest, CudaOnTheCpuBuildOrWithoutAGpuIsRefusedNamingCudaAndTheFix) {
  std::string m = Refusal({"cuda", "auto", 0, 1}, CpuBuild());
  EXPECT_TRUE(Has(m, "learner.device=cuda") && Has(m, "no CUDA") && Has(m, "--torch=pypi")) << m;
  m = Refusal({"cuda", "auto", 0, 1}, CudaBuild(0));
  EXPECT_TRUE(Has(m, "no CUDA device is visible")) << m;
  m = Refusal({"auto", "nccl", 0, 1}, CpuBuild());
  EXPECT_TRUE(Has(m, "learner.backend=nccl")) << m;
}

TEST(DevicePlanTest, TwoRanksOnOneGpuAreRefused) {
  const std::string m = Refusal({"cuda", "nccl", 1, 2}, CudaBuild(1));
  EXPECT_TRUE(Has(m, "local rank 1") && Has(m, "1 GPU(s)")) << m;
}

TEST(DevicePlanTest, BackendsThatDoNotFitTheDeviceAreRefused) {
  EXPECT_TRUE(Has(Refusal({"cpu", "nccl", 0, 2}, CudaBuild(2)), "needs learner.device=cuda"));
  EXPECT_TRUE(Has(Refusal({"cuda", "gloo", 0, 2}, CudaBuild(2)), "learner.backend=gloo"));
  EXPECT_TRUE(Has(Refusal({"tpu", "auto", 0, 1}, CpuBuild()), "learner.device='tpu'"));
  EXPECT_TRUE(Has(Refusal({"cpu", "mpi", 0, 1}, CpuBuild()), "learner.backend='mpi'"));
}

TEST(DevicePlanTest, ThisProcessMatchesTheBuild) {
  const DeviceInventory inv = ThisProcessInventory();
  EXPECT_EQ(inv.built_with_cuda, BuiltWithCuda());
  EXPECT_TRUE(Has(inv.build, std::string("LibTorch ") + TORCH_VERSION)) << inv.build;
  if (!inv.built_with_cuda) {
    EXPECT_EQ(inv.cuda_devices, 0);
  }
}

}  // namespace
}  // namespace rlswarm::learner
