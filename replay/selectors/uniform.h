#pragma once

// UniformSelector: every live item is drawn with probability 1 / size, in
// O(1). Live slots are kept densely packed (swap-remove) next to each slot's
// position, so insert, remove and sample are all O(1). Priorities are ignored.
//
// Not thread safe (see interface.h).

#include <cstdint>
#include <vector>

#include "replay/selectors/interface.h"

namespace rlswarm::replay {

class UniformSelector final : public Selector {
 public:
  explicit UniformSelector(std::int64_t capacity);

  void Insert(std::int64_t slot, double priority) override;
  void Update(std::int64_t, double) override {}
  void Remove(std::int64_t slot) override;
  Selection Sample(Rng& rng) const override;
  std::int64_t size() const override { return static_cast<std::int64_t>(live_.size()); }
  double TotalWeight() const override { return static_cast<double>(live_.size()); }
  void Reconfigure(const SelectorOptions&) override {}

  bool Contains(std::int64_t slot) const { return position_[slot] >= 0; }

 private:
  std::vector<std::int64_t> live_;      // the live slots, densely packed
  std::vector<std::int64_t> position_;  // slot -> index in live_, or -1
};

}  // namespace rlswarm::replay
