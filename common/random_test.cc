#include "common/random.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>

namespace rlswarm {
namespace {

TEST(RngTest, SameSeedGivesSameStreamAndDifferentSeedsDiffer) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const auto x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    EXPECT_NE(x, c.NextU64());
  }
}

TEST(RngTest, StreamIsPinnedBitForBit) {
  // Episodes must replay identically on every platform and compiler: pin the
  // first output of seed 0 (xoshiro256++ seeded by SplitMix64(0), the
  // published reference value) so an accidental change of the generator fails.
  Rng rng(0);
  const std::uint64_t first = rng.NextU64();
  Rng again(0);
  EXPECT_EQ(first, again.NextU64());
  EXPECT_EQ(first, 0x53175d61490b23dfULL);
}

TEST(RngTest, Uniform01IsInRangeWithTheRightMean) {
  Rng rng(1);
  double sum = 0.0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.Uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.005);
}

TEST(RngTest, IntegerCoversExactlyTheHalfOpenRangeUniformly) {
  Rng rng(2);
  std::array<int, 5> counts{};
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const auto v = rng.Integer(-2, 3);
    ASSERT_GE(v, -2);
    ASSERT_LT(v, 3);
    ++counts[v + 2];
  }
  for (int c : counts) EXPECT_NEAR(c, kN / 5, kN / 5 * 0.05);
}

TEST(RngTest, BernoulliFrequencyMatchesP) {
  Rng rng(3);
  int hits = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) hits += rng.Bernoulli(0.1);
  EXPECT_NEAR(hits / static_cast<double>(kN), 0.1, 0.006);
}

TEST(RngTest, NormalHasMeanZeroVarianceOneAndNormalTails) {
  Rng rng(11);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  int beyond_two = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.Normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    beyond_two += std::abs(z) > 2.0;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.015);
  EXPECT_NEAR(static_cast<double>(beyond_two) / n, 0.0455, 0.003);  // P(|Z| > 2)
}

TEST(DeriveSeedTest, DistinctIndicesGiveDistinctSeeds) {
  std::set<std::uint64_t> seeds;
  for (std::uint64_t s = 0; s < 4; ++s) {
    for (std::uint64_t i = 0; i < 1000; ++i) seeds.insert(DeriveSeed(s, i));
  }
  EXPECT_EQ(seeds.size(), 4000u);
  EXPECT_NE(DeriveSeed(0, 1), DeriveSeed(1, 0));
}

}  // namespace
}  // namespace rlswarm
