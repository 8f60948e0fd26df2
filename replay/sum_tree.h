#pragma once

// SumTree: a complete binary tree whose leaves hold non-negative weights and
// whose inner nodes hold the sum of their children, so that setting a leaf
// and drawing a leaf with probability weight / total both take O(log n)
// (the "sum-tree" of PER, Schaul et al. 2016, Appendix B.2.1).
//
// Inner nodes are recomputed from their children on every update (never
// adjusted by a delta), so rounding errors do not accumulate however many
// updates a leaf sees.
//
// Not thread safe: the owner serialises access.

#include <cassert>
#include <cstdint>
#include <vector>

namespace rlswarm::replay {

class SumTree {
 public:
  // `num_leaves` >= 1 leaves, all 0.
  explicit SumTree(std::int64_t num_leaves);

  std::int64_t num_leaves() const { return num_leaves_; }
  // Requires 0 <= leaf < num_leaves() and weight finite and >= 0.
  void Set(std::int64_t leaf, double weight);
  double Get(std::int64_t leaf) const { return nodes_[base_ + leaf]; }
  double Total() const {
    assert(dirty_.empty());
    return nodes_[1];
  }
  // Sets every leaf at once in O(n) (used when alpha changes and on restore).
  void Assign(const std::vector<double>& weights);

  // Batched updates: SetDeferred only writes the leaf; Propagate() then
  // recomputes every inner node above the leaves set since the last
  // Propagate, each once. A batch of B leaves in a run (FIFO inserts fill
  // consecutive slots) costs O(B + log n) instead of B * log n dependent
  // node writes. Total, Find and Set must not be called while leaves are
  // pending (asserted).
  void SetDeferred(std::int64_t leaf, double weight);
  void Propagate();
  bool pending() const { return !dirty_.empty(); }

  // The leaf whose prefix-sum interval holds `mass`, for `mass` in
  // [0, Total()). Never returns a leaf of weight 0: a subtree of sum 0 is
  // never entered, so rounding cannot land on an empty leaf. Requires
  // Total() > 0.
  std::int64_t Find(double mass) const;

 private:
  std::int64_t num_leaves_;
  std::int64_t base_;                // index of leaf 0: the smallest power of two >= num_leaves
  std::vector<double> nodes_;        // 1-based heap layout; nodes_[0] unused
  std::vector<std::int64_t> dirty_;  // nodes whose parents are stale (reused)
};

}  // namespace rlswarm::replay
