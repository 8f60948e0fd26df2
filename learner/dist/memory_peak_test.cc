// PeakMemoryMeter against an allocation of known size.

#include "learner/dist/memory_peak.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace rlswarm::learner {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(PeakMemoryMeterTest, SeesALargeAllocationAndResetForgetsIt) {
  PeakMemoryMeter meter;
  {
    // 200 MiB, every page written (at::ones touches them all).
    at::Tensor big = at::ones({200 * kMiB / 4}, at::kFloat);
    EXPECT_GE(meter.PeakBytesAboveBaseline(), 150 * kMiB);
  }
  // Freed: the peak stays until Reset makes the present the baseline.
  EXPECT_GE(meter.PeakBytesAboveBaseline(), 150 * kMiB);
  meter.Reset();
  if (!meter.ResetsHighWaterMark()) {
    GTEST_SKIP() << "this kernel cannot reset VmHWM (/proc/self/clear_refs)";
  }
  EXPECT_LT(meter.PeakBytesAboveBaseline(), 50 * kMiB);
  // And a second, smaller allocation is measured from the new baseline.
  at::Tensor small = at::ones({64 * kMiB / 4}, at::kFloat);
  EXPECT_GE(meter.PeakBytesAboveBaseline(), 48 * kMiB);
  EXPECT_LT(meter.PeakBytesAboveBaseline(), 150 * kMiB);
}

}  // namespace
}  // namespace rlswarm::learner
