#pragma once

// PrioritizedSelector: proportional prioritization of PER (Schaul et al.
// 2016, section 3.3): item i is drawn with probability
//   P(i) = p_i^alpha / sum_k p_k^alpha
// using a SumTree over the slots (O(log capacity) insert, update, remove and
// sample). If every live item has weight 0 (all priorities 0 with alpha > 0)
// it draws uniformly among the live items rather than failing, as Reverb does.
//
// Not thread safe (see interface.h).

#include <cstdint>
#include <span>
#include <vector>

#include "replay/selectors/interface.h"
#include "replay/selectors/uniform.h"
#include "replay/sum_tree.h"

namespace rlswarm::replay {

class PrioritizedSelector final : public Selector {
 public:
  PrioritizedSelector(std::int64_t capacity, double alpha);

  void Insert(std::int64_t slot, double priority) override;
  void Update(std::int64_t slot, double priority) override;
  void Remove(std::int64_t slot) override;
  void BeginBatch() override { batching_ = true; }
  void EndBatch() override;
  Selection Sample(Rng& rng) const override;
  std::int64_t size() const override { return live_.size(); }
  double TotalWeight() const override { return tree_.Total(); }
  // Recomputes every weight in O(capacity) if alpha changed.
  void Reconfigure(const SelectorOptions& options) override;

  // The probability that one draw returns `slot` now (0 for an empty slot).
  double Probability(std::int64_t slot) const;

 private:
  double Weight(double priority) const;
  void SetWeight(std::int64_t slot, double weight);

  double alpha_;
  std::vector<double> priorities_;  // raw p_i per slot, kept to recompute p^alpha
  SumTree tree_;                    // p_i^alpha per slot, 0 for empty slots
  UniformSelector live_;            // live slots, for size() and the all-zero fallback
  bool batching_ = false;           // tree_ leaves are set deferred until EndBatch
};

// Importance-sampling weights of PER, section 3.4:
//   w_i = (N * P(i))^-beta / max_j w_j
// with N the table size when item i was drawn and the max taken over the
// batch, so the largest weight of every batch is exactly 1 (as in Dopamine;
// OpenAI Baselines divides by the largest weight over the whole buffer
// instead, which needs the minimum priority of all items). Requires every
// sizes[i] * probabilities[i] > 0; writes weights.size() == probabilities.size().
void ComputeImportanceWeights(std::span<const double> probabilities,
                              std::span<const std::int64_t> sizes, double beta,
                              std::span<double> weights);

}  // namespace rlswarm::replay
