// The GPU path's building blocks on one GPU (testing/cuda_primitives_scenario.cc,
// in worker processes of their own): the adapter's collectives on CUDA
// tensors through a 1-rank NCCL group, storage surgery on CUDA storage, waits
// that do not block the host, NCCL's device timings, staging and host
// copies beside a busy compute stream, and a PeakMemoryMeter as a process's
// first CUDA call. Every test skips, saying why, without a GPU; together
// they take a few seconds on one (scripts/gpu_check.sh runs them first).

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "learner/dist/torch_adapter.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;

constexpr char kNoGpu[] = "needs a GPU; ";

std::string WhyNoGpu() {
  return std::string(kNoGpu) + TorchBuildDescription() + " sees " +
         std::to_string(CudaDeviceCount()) + " CUDA device(s)";
}

// "<name> <value>" lines of a worker's result file.
std::map<std::string, std::string> ReadValues(const std::string& path) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name, value;
    if (fields >> name >> value) values[name] = value;
  }
  return values;
}

class CudaPrimitivesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() < 1) GTEST_SKIP() << WhyNoGpu();
    dir_ = th::RunWorkersOnce("cuda_primitives", 1, std::chrono::seconds(60));
    ASSERT_EQ(th::ExitCodes(dir_), std::vector<int>{0}) << th::ReadText(dir_ + "/rank0.err");
    values_ = ReadValues(dir_ + "/cuda_primitives.txt");
  }
  double Number(const std::string& name) {
    EXPECT_TRUE(values_.count(name)) << name << " missing from " << dir_;
    return values_.count(name) ? std::stod(values_[name]) : -1;
  }
  std::string dir_;
  std::map<std::string, std::string> values_;
};

TEST_F(CudaPrimitivesTest, CollectivesOnCudaTensorsMatchWhatEachRankComputes) {
  const std::map<std::string, std::string> verdicts = ReadValues(dir_ + "/collectives.rank0.txt");
  // all-gather and all-reduce in 3 dtypes, 4 reduce-scatter paths in 3,
  // two reductions in flight, the control plane, device-timed stats.
  EXPECT_GE(verdicts.size(), 3u + 3u * 4u + 3u + 3u);
  for (const auto& [name, verdict] : verdicts) EXPECT_EQ(verdict, "ok") << name;
}

TEST_F(CudaPrimitivesTest, StorageReleasedReallocatedTakenAndAdoptedKeepsDeviceAndData) {
  EXPECT_EQ(values_["storage"], "ok");
}

TEST_F(CudaPrimitivesTest, WaitingForACollectiveBehindABusyKernelDoesNotBlockTheHost) {
  EXPECT_GE(Number("kernel_ms"), 40.0);  // the kernel really ran that long
  EXPECT_LT(Number("wait_host_ms"), 10.0);
  EXPECT_EQ(values_["wait_result"], "ok");
}

TEST_F(CudaPrimitivesTest, StagingAndHostCopiesDoNotWaitForTheComputeStream) {
  EXPECT_LT(Number("stage_host_ms"), 10.0);
  EXPECT_EQ(values_["stage_data"], "ok");
  EXPECT_LT(Number("copy_host_ms"), 10.0);
  EXPECT_EQ(values_["copy_data"], "ok");  // ordered after the compute stream's work
}

TEST(CudaPrimitivesMeterTest, PeakMemoryMeterCanBeAProcesssFirstCudaCall) {
  if (CudaDeviceCount() < 1) GTEST_SKIP() << WhyNoGpu();
  const std::string dir = th::RunWorkersOnce("meter_first", 1, std::chrono::seconds(60));
  ASSERT_EQ(th::ExitCodes(dir), std::vector<int>{0}) << th::ReadText(dir + "/rank0.err");
  const std::map<std::string, std::string> values = ReadValues(dir + "/meter_first.txt");
  ASSERT_TRUE(values.count("meter_first"));
  EXPECT_GE(std::stoll(values.at("meter_first")), int64_t{64} << 20);
}

}  // namespace
}  // namespace rlswarm::learner
