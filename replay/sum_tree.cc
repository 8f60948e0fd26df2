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
  assert(leaf >= 0 && leaf < num_leaves_ && weight >= 0);
  std::int64_t node = base_ + leaf;
  nodes_[node] = weight;
  for (node /= 2; node >= 1; node /= 2) nodes_[node] = nodes_[2 * node] + nodes_[2 * node + 1];
}

void SumTree::Assign(const std::vector<double>& weights) {
  assert(static_cast<std::int64_t>(weights.size()) == num_leaves_);
  std::fill(nodes_.begin(), nodes_.end(), 0.0);
  for (std::int64_t i = 0; i < num_leaves_; ++i) nodes_[base_ + i] = weights[i];
  for (std::int64_t node = base_ - 1; node >= 1; --node) {
    nodes_[node] = nodes_[2 * node] + nodes_[2 * node + 1];
  }
}

std::int64_t SumTree::Find(double mass) const {
  assert(Total() > 0);
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
