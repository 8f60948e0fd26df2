#include "replay/selectors/prioritized.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rlswarm::replay {
namespace {

// Pearson's chi-square statistic of observed counts against probabilities.
double ChiSquare(const std::vector<std::int64_t>& observed, const std::vector<double>& p,
                 std::int64_t draws) {
  double chi2 = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    if (p[i] == 0) continue;
    const double expected = p[i] * static_cast<double>(draws);
    chi2 += (static_cast<double>(observed[i]) - expected) * (observed[i] - expected) / expected;
  }
  return chi2;
}

TEST(PrioritizedSelectorTest, FrequenciesFollowPriorityToTheAlpha) {
  const std::vector<double> priorities = {1, 2, 3, 4, 0, 10, 0.5, 7.5};
  constexpr double kAlpha = 0.7;
  PrioritizedSelector selector(static_cast<std::int64_t>(priorities.size()), kAlpha);
  double total = 0;
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    selector.Insert(static_cast<std::int64_t>(i), priorities[i]);
    total += std::pow(priorities[i], kAlpha);
  }
  std::vector<double> p;
  for (double priority : priorities) p.push_back(std::pow(priority, kAlpha) / total);

  constexpr std::int64_t kDraws = 200000;
  std::vector<std::int64_t> counts(priorities.size(), 0);
  Rng rng(42);
  for (std::int64_t i = 0; i < kDraws; ++i) {
    const Selection s = selector.Sample(rng);
    ++counts[s.slot];
    ASSERT_NEAR(s.probability, p[s.slot], 1e-12);
  }
  EXPECT_EQ(counts[4], 0) << "an item of priority 0 was drawn";
  // 7 categories with p > 0: 6 degrees of freedom, P(chi2 > 22.5) = 0.001.
  // 40 leaves a wide margin; the seed is fixed, so this is deterministic.
  EXPECT_LT(ChiSquare(counts, p, kDraws), 40.0);
}

TEST(PrioritizedSelectorTest, UpdatesAndRemovalsChangeTheDistribution) {
  PrioritizedSelector selector(4, 1.0);
  selector.Insert(0, 1.0);
  selector.Insert(1, 1.0);
  selector.Insert(2, 2.0);
  EXPECT_DOUBLE_EQ(selector.Probability(2), 0.5);
  selector.Update(2, 6.0);
  EXPECT_DOUBLE_EQ(selector.Probability(2), 0.75);
  selector.Remove(0);
  EXPECT_EQ(selector.size(), 2);
  EXPECT_DOUBLE_EQ(selector.Probability(0), 0.0);
  EXPECT_DOUBLE_EQ(selector.Probability(2), 6.0 / 7.0);
}

TEST(PrioritizedSelectorTest, AllZeroPrioritiesSampleUniformly) {
  PrioritizedSelector selector(5, 0.6);
  for (std::int64_t slot : {1, 3, 4}) selector.Insert(slot, 0.0);
  Rng rng(1);
  std::vector<std::int64_t> counts(5, 0);
  for (int i = 0; i < 3000; ++i) {
    const Selection s = selector.Sample(rng);
    EXPECT_DOUBLE_EQ(s.probability, 1.0 / 3.0);
    ++counts[s.slot];
  }
  EXPECT_EQ(counts[0] + counts[2], 0);
  for (std::int64_t slot : {1, 3, 4}) EXPECT_GT(counts[slot], 800);
}

TEST(PrioritizedSelectorTest, ReconfiguringAlphaRecomputesWeights) {
  PrioritizedSelector selector(3, 1.0);  // slot 2 stays empty
  selector.Insert(0, 1.0);
  selector.Insert(1, 4.0);
  EXPECT_DOUBLE_EQ(selector.Probability(1), 0.8);
  selector.Reconfigure({SelectorKind::kPrioritized, 0.5, 0.4});
  EXPECT_DOUBLE_EQ(selector.Probability(1), 2.0 / 3.0);
  selector.Reconfigure({SelectorKind::kPrioritized, 0.0, 0.4});  // uniform over live items
  EXPECT_DOUBLE_EQ(selector.Probability(1), 0.5);
  EXPECT_DOUBLE_EQ(selector.Probability(2), 0.0);
}

TEST(ImportanceWeightsTest, MatchesPerByHand) {
  // N = 4, P = 1/2, 1/4, 1/8, beta = 1/2: (N P)^-beta = 2^-0.5, 1, 2^0.5;
  // divided by the batch maximum 2^0.5: 1/2, 2^-0.5, 1.
  const std::vector<double> p = {0.5, 0.25, 0.125};
  const std::vector<std::int64_t> n = {4, 4, 4};
  std::vector<double> w(3);
  ComputeImportanceWeights(p, n, 0.5, w);
  EXPECT_DOUBLE_EQ(w[0], 0.5);
  EXPECT_DOUBLE_EQ(w[1], std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(w[2], 1.0);

  ComputeImportanceWeights(p, n, 0.0, w);  // beta = 0: no correction
  for (double weight : w) EXPECT_DOUBLE_EQ(weight, 1.0);
}

}  // namespace
}  // namespace rlswarm::replay
