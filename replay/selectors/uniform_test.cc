#include "replay/selectors/uniform.h"

#include <gtest/gtest.h>

#include <vector>

namespace rlswarm::replay {
namespace {

TEST(UniformSelectorTest, DrawsEveryLiveSlotEquallyAndNeverARemovedOne) {
  UniformSelector selector(10);
  for (std::int64_t slot = 0; slot < 10; ++slot) selector.Insert(slot, 1.0);
  selector.Remove(3);
  selector.Remove(7);
  ASSERT_EQ(selector.size(), 8);

  constexpr std::int64_t kDraws = 80000;
  std::vector<std::int64_t> counts(10, 0);
  Rng rng(3);
  for (std::int64_t i = 0; i < kDraws; ++i) {
    const Selection s = selector.Sample(rng);
    EXPECT_DOUBLE_EQ(s.probability, 1.0 / 8);
    ++counts[s.slot];
  }
  EXPECT_EQ(counts[3] + counts[7], 0);
  double chi2 = 0;
  const double expected = kDraws / 8.0;
  for (std::int64_t slot = 0; slot < 10; ++slot) {
    if (slot == 3 || slot == 7) continue;
    chi2 += (counts[slot] - expected) * (counts[slot] - expected) / expected;
  }
  // 7 degrees of freedom: P(chi2 > 24.3) = 0.001; 40 is a wide margin.
  EXPECT_LT(chi2, 40.0);
}

TEST(UniformSelectorTest, ReinsertingARemovedSlotWorks) {
  UniformSelector selector(2);
  selector.Insert(0, 1.0);
  selector.Insert(1, 1.0);
  selector.Remove(0);
  selector.Insert(0, 1.0);
  selector.Remove(1);
  Rng rng(1);
  EXPECT_EQ(selector.Sample(rng).slot, 0);
  EXPECT_TRUE(selector.Contains(0));
  EXPECT_FALSE(selector.Contains(1));
}

}  // namespace
}  // namespace rlswarm::replay
