#include "replay/sum_tree.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/random.h"

namespace rlswarm::replay {
namespace {

TEST(SumTreeTest, TotalFollowsUpdates) {
  SumTree tree(5);
  EXPECT_EQ(tree.Total(), 0.0);
  tree.Set(0, 1.0);
  tree.Set(3, 2.5);
  tree.Set(4, 0.5);
  EXPECT_DOUBLE_EQ(tree.Total(), 4.0);
  tree.Set(3, 0.0);
  EXPECT_DOUBLE_EQ(tree.Total(), 1.5);
  EXPECT_EQ(tree.Get(4), 0.5);
}

TEST(SumTreeTest, ManyRandomUpdatesMatchABruteForceSum) {
  constexpr int kLeaves = 1000;
  SumTree tree(kLeaves);
  std::vector<double> leaves(kLeaves, 0.0);
  Rng rng(7);
  for (int i = 0; i < 100000; ++i) {
    const auto leaf = static_cast<std::int64_t>(rng.Below(kLeaves));
    leaves[leaf] = rng.Uniform01() * 10;
    tree.Set(leaf, leaves[leaf]);
  }
  double sum = 0;
  for (double w : leaves) sum += w;
  EXPECT_NEAR(tree.Total(), sum, 1e-9 * sum);
}

TEST(SumTreeTest, FindMapsPrefixSumIntervalsToLeaves) {
  SumTree tree(4);
  tree.Set(0, 1.0);  // [0, 1)
  tree.Set(1, 0.0);  // empty
  tree.Set(2, 2.0);  // [1, 3)
  tree.Set(3, 1.0);  // [3, 4)
  EXPECT_EQ(tree.Find(0.0), 0);
  EXPECT_EQ(tree.Find(0.999), 0);
  EXPECT_EQ(tree.Find(1.0), 2);
  EXPECT_EQ(tree.Find(2.999), 2);
  EXPECT_EQ(tree.Find(3.0), 3);
  // Rounding past the end never lands on an empty leaf or out of range.
  EXPECT_EQ(tree.Find(4.5), 3);
}

TEST(SumTreeTest, FindNeverReturnsAZeroLeaf) {
  SumTree tree(7);
  tree.Set(6, 1e-300);
  for (double mass : {0.0, 1e-301, 5e-300, 1.0}) EXPECT_EQ(tree.Find(mass), 6);
}

TEST(SumTreeTest, AssignSetsEveryLeaf) {
  SumTree tree(3);
  tree.Assign({1.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(tree.Total(), 6.0);
  EXPECT_EQ(tree.Find(1.5), 1);
}

TEST(SumTreeTest, DeferredBatchesMatchImmediateSets) {
  // Runs (FIFO inserts), repeats of one leaf (evict then insert the same
  // slot) and random scattered leaves (priority updates), unsorted; after
  // each Propagate every inner node must equal the tree built by Set.
  constexpr int kLeaves = 1000;  // not a power of two: padding leaves stay 0
  SumTree deferred(kLeaves);
  SumTree immediate(kLeaves);
  Rng rng(11);
  for (int round = 0; round < 200; ++round) {
    const auto start = static_cast<std::int64_t>(rng.Below(kLeaves));
    const auto count = 1 + static_cast<std::int64_t>(rng.Below(300));
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t leaf = (start + i) % kLeaves;
      if (round % 3 == 2) leaf = static_cast<std::int64_t>(rng.Below(kLeaves));
      const double weight = rng.Uniform01() * 5;
      if (round % 3 == 1) {
        deferred.SetDeferred(leaf, 0.0);
        immediate.Set(leaf, 0.0);
      }
      deferred.SetDeferred(leaf, weight);
      immediate.Set(leaf, weight);
    }
    EXPECT_TRUE(deferred.pending());
    deferred.Propagate();
    EXPECT_FALSE(deferred.pending());
    ASSERT_EQ(deferred.Total(), immediate.Total()) << "round " << round;
    for (double mass : {0.0, 0.25, 0.5, 0.75, 0.999}) {
      ASSERT_EQ(deferred.Find(mass * deferred.Total()), immediate.Find(mass * immediate.Total()));
    }
  }
}

TEST(SumTreeTest, PropagateWithNothingPendingAndOneLeafTrees) {
  SumTree one(1);
  one.Propagate();
  one.SetDeferred(0, 2.0);
  one.Propagate();
  EXPECT_EQ(one.Total(), 2.0);
  EXPECT_EQ(one.Find(1.0), 0);
}

}  // namespace
}  // namespace rlswarm::replay
