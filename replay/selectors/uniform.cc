#include "replay/selectors/uniform.h"

#include <cassert>

namespace rlswarm::replay {

UniformSelector::UniformSelector(std::int64_t capacity) : position_(capacity, -1) {
  live_.reserve(capacity);
}

void UniformSelector::Insert(std::int64_t slot, double) {
  assert(position_[slot] < 0);
  position_[slot] = static_cast<std::int64_t>(live_.size());
  live_.push_back(slot);
}

void UniformSelector::Remove(std::int64_t slot) {
  const std::int64_t index = position_[slot];
  assert(index >= 0);
  const std::int64_t last = live_.back();
  live_[index] = last;
  position_[last] = index;
  live_.pop_back();
  position_[slot] = -1;
}

Selection UniformSelector::Sample(Rng& rng) const {
  assert(!live_.empty());
  const auto n = static_cast<std::uint64_t>(live_.size());
  return {live_[rng.Below(n)], 1.0 / static_cast<double>(n)};
}

}  // namespace rlswarm::replay
