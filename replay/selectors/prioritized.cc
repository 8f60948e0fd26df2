#include "replay/selectors/prioritized.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace rlswarm::replay {

PrioritizedSelector::PrioritizedSelector(std::int64_t capacity, double alpha)
    : alpha_(alpha), priorities_(capacity, 0.0), tree_(capacity), live_(capacity) {}

double PrioritizedSelector::Weight(double priority) const {
  // alpha 1 is common enough (and pow slow enough) for a shortcut.
  return alpha_ == 1.0 ? priority : std::pow(priority, alpha_);
}

void PrioritizedSelector::SetWeight(std::int64_t slot, double weight) {
  if (batching_) {
    tree_.SetDeferred(slot, weight);
  } else {
    tree_.Set(slot, weight);
  }
}

void PrioritizedSelector::EndBatch() {
  batching_ = false;
  tree_.Propagate();
}

void PrioritizedSelector::Insert(std::int64_t slot, double priority) {
  live_.Insert(slot, priority);
  priorities_[slot] = priority;
  SetWeight(slot, Weight(priority));
}

void PrioritizedSelector::Update(std::int64_t slot, double priority) {
  priorities_[slot] = priority;
  SetWeight(slot, Weight(priority));
}

void PrioritizedSelector::Remove(std::int64_t slot) {
  live_.Remove(slot);
  priorities_[slot] = 0.0;
  SetWeight(slot, 0.0);
}

Selection PrioritizedSelector::Sample(Rng& rng) const {
  assert(!batching_);
  const double total = tree_.Total();
  if (!(total > 0)) return live_.Sample(rng);
  const std::int64_t slot = tree_.Find(rng.Uniform01() * total);
  return {slot, tree_.Get(slot) / total};
}

double PrioritizedSelector::Probability(std::int64_t slot) const {
  const double total = tree_.Total();
  if (total > 0) return tree_.Get(slot) / total;
  return live_.size() > 0 ? 1.0 / static_cast<double>(live_.size()) : 0.0;
}

void PrioritizedSelector::Reconfigure(const SelectorOptions& options) {
  assert(!batching_);
  if (options.alpha == alpha_) return;
  alpha_ = options.alpha;
  std::vector<double> weights(priorities_.size(), 0.0);
  for (std::size_t slot = 0; slot < priorities_.size(); ++slot) {
    // Empty slots stay at weight 0 even when alpha = 0 (0^0 = 1).
    if (live_.Contains(static_cast<std::int64_t>(slot))) weights[slot] = Weight(priorities_[slot]);
  }
  tree_.Assign(weights);
}

void ComputeImportanceWeights(std::span<const double> probabilities,
                              std::span<const std::int64_t> sizes, double beta,
                              std::span<double> weights) {
  assert(probabilities.size() == sizes.size() && weights.size() == probabilities.size());
  double max_weight = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    const double n_p = static_cast<double>(sizes[i]) * probabilities[i];
    weights[i] = std::pow(n_p, -beta);
    max_weight = std::max(max_weight, weights[i]);
  }
  if (max_weight > 0) {
    for (double& w : weights) w /= max_weight;
  }
}

}  // namespace rlswarm::replay
