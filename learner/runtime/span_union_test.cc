// SpanUnion against spans whose union is known.

#include "learner/runtime/span_union.h"

#include <gtest/gtest.h>

namespace rlswarm::learner {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(SpanUnionTest, CountsOverlappingSpansOnce) {
  SpanUnion u;
  u.Add(0, 2 * kSecond);
  u.Add(1 * kSecond, 3 * kSecond);  // overlaps the first by 1 s
  u.Add(1 * kSecond, 2 * kSecond);  // inside both
  EXPECT_DOUBLE_EQ(u.Seconds(), 3.0);
}

TEST(SpanUnionTest, AddsDisjointSpansAndMergesOneThatBridgesThem) {
  SpanUnion u;
  u.Add(4 * kSecond, 5 * kSecond);
  u.Add(0, 1 * kSecond);  // out of order
  EXPECT_DOUBLE_EQ(u.Seconds(), 2.0);
  u.Add(kSecond / 2, 4 * kSecond + kSecond / 2);  // covers the gap between them
  EXPECT_DOUBLE_EQ(u.Seconds(), 5.0);
}

TEST(SpanUnionTest, IgnoresEmptySpansAndResetForgets) {
  SpanUnion u;
  u.Add(3, 3);
  u.Add(5, 2);
  EXPECT_EQ(u.Seconds(), 0.0);
  u.Add(0, kSecond);
  u.Reset();
  EXPECT_EQ(u.Seconds(), 0.0);
}

TEST(SpanUnionTest, NeverCountsAMomentTwiceOncePastWhatItKeeps) {
  SpanUnion u;
  // Many short disjoint spans: the oldest are folded into the total.
  const int64_t n = 3 * SpanUnion::kMaxKept;
  for (int64_t i = 0; i < n; ++i) u.Add(2 * i * kSecond, (2 * i + 1) * kSecond);
  EXPECT_DOUBLE_EQ(u.Seconds(), static_cast<double>(n));
  // A late span over all of them adds only the gaps it can still see, never
  // the folded spans again.
  u.Add(0, 2 * n * kSecond);
  EXPECT_LE(u.Seconds(), static_cast<double>(2 * n));
  EXPECT_GE(u.Seconds(), static_cast<double>(n));
}

}  // namespace
}  // namespace rlswarm::learner
