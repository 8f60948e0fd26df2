#include "replay/sum_tree.h"

#include <algorithm>
#include <cassert>

namespace rlswarm::replay {

SumTree::SumTree(std::int64_t num_leaves) : num_leaves_(num_leaves), base_(1) {
  assert(num_leaves >= 1);
  while (base_ < num_leaves) base_ *= 2;
  nodes_.assign(2 * base_, 0.0);
}

void SumTree::Set(std::int64_t leaf, double weight) {
  assert(leaf >= 0 && leaf < num_leaves_ && weight >= 0 && dirty_.empty());
  std::int64_t node = base_ + leaf;
  nodes_[node] = weight;
  for (node /= 2; node >= 1; node /= 2) nodes_[node] = nodes_[2 * node] + nodes_[2 * node + 1];
}

void SumTree::SetDeferred(std::int64_t leaf, double weight) {
  assert(leaf >= 0 && leaf < num_leaves_ && weight >= 0);
  nodes_[base_ + leaf] = weight;
  dirty_.push_back(base_ + leaf);
}

void SumTree::Propagate() {
  if (dirty_.empty()) return;
  // Level by level: the parents of a sorted list of nodes are sorted, so
  // duplicates (siblings, a leaf set twice) are adjacent and dropped by
  // std::unique; each inner node is recomputed once from its children.
  if (!std::is_sorted(dirty_.begin(), dirty_.end())) std::sort(dirty_.begin(), dirty_.end());
  auto end = dirty_.end();
  while (dirty_.front() > 1) {
    for (auto it = dirty_.begin(); it != end; ++it) *it /= 2;
    end = std::unique(dirty_.begin(), end);
    for (auto it = dirty_.begin(); it != end; ++it) {
      nodes_[*it] = nodes_[2 * *it] + nodes_[2 * *it + 1];
    }
  }
  dirty_.clear();
}

void SumTree::Assign(const std::vector<double>& weights) {
  assert(static_cast<std::int64_t>(weights.size()) == num_leaves_);
  dirty_.clear();
  std::fill(nodes_.begin(), nodes_.end(), 0.0);
  for (std::int64_t i = 0; i < num_leaves_; ++i) nodes_[base_ + i] = weights[i];
  for (std::int64_t node = base_ - 1; node >= 1; --node) {
    nodes_[node] = nodes_[2 * node] + nodes_[2 * node + 1];
  }
}

std::int64_t SumTree::Find(double mass) const {
  assert(dirty_.empty() && Total() > 0);
  std::int64_t node = 1;
  while (node < base_) {
    const double left = nodes_[2 * node];
    const double right = nodes_[2 * node + 1];
    if (left > 0 && (mass < left || right <= 0)) {
      node = 2 * node;
    } else {
      mass = mass > left ? mass - left : 0.0;
      node = 2 * node + 1;
    }
  }
  return node - base_;
}

}  // namespace rlswarm::replay
