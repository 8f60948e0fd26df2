#pragma once

// Selectors decide which item a sample draws. The table stores items in
// slots [0, capacity) and tells its selector about every slot that gains an
// item, changes priority or loses its item; Sample() then returns a live slot
// and the probability with which it was drawn (for importance weights).
//
// Selectors are not thread safe: the owning Table calls every method under
// its lock. They never allocate after construction.

#include <cstdint>
#include <memory>
#include <string_view>

#include "common/random.h"

namespace rlswarm::replay {

enum class SelectorKind { kUniform, kPrioritized };

// "uniform" / "prioritized", and back (ParseSelectorKind throws
// InvalidArgument naming the accepted names).
std::string_view SelectorKindName(SelectorKind kind);
SelectorKind ParseSelectorKind(std::string_view name);

struct SelectorOptions {
  SelectorKind kind = SelectorKind::kUniform;
  // Prioritized only. P(i) = p_i^alpha / sum_k p_k^alpha (PER, eq. 1); 0 is
  // uniform over all items, including those of priority 0 (0^0 = 1).
  double alpha = 0.6;
  // Importance-sampling exponent (PER, section 3.4): 0 gives weights of 1,
  // 1 fully compensates the non-uniform sampling. Used by the table for any
  // selector (uniform sampling always yields weights of 1).
  double beta = 0.4;

  // Throws InvalidArgument unless alpha and beta are finite, alpha >= 0 and
  // 0 <= beta <= 1.
  void Validate() const;
};

struct Selection {
  std::int64_t slot = 0;
  double probability = 0;  // probability that this draw returned `slot`
};

class Selector {
 public:
  virtual ~Selector() = default;

  // `slot` gains an item of `priority` (finite, >= 0). The slot is empty.
  virtual void Insert(std::int64_t slot, double priority) = 0;
  // The item in `slot` now has `priority` (finite, >= 0).
  virtual void Update(std::int64_t slot, double priority) = 0;
  // `slot` loses its item.
  virtual void Remove(std::int64_t slot) = 0;
  // Between BeginBatch and EndBatch a selector may defer the work that many
  // Insert/Update/Remove calls share (a prioritized selector recomputes the
  // sum tree's inner nodes once, in EndBatch, not once per call). Sample,
  // Probability and TotalWeight are not called in between.
  virtual void BeginBatch() {}
  virtual void EndBatch() {}
  // Draws one live slot. Requires size() > 0.
  virtual Selection Sample(Rng& rng) const = 0;
  virtual std::int64_t size() const = 0;
  // The sum of the weights that sampling is proportional to: size() for
  // uniform, sum of p_i^alpha for prioritized (0 when every priority is 0).
  // A sharded sampler draws from each shard in proportion to it.
  virtual double TotalWeight() const = 0;
  // Applies new parameters (the kind stays). May take O(capacity), e.g. a
  // prioritized selector recomputes every p^alpha when alpha changes.
  virtual void Reconfigure(const SelectorOptions& options) = 0;
};

// A selector of options.kind over `capacity` slots. options must be valid.
std::unique_ptr<Selector> MakeSelector(const SelectorOptions& options, std::int64_t capacity);

}  // namespace rlswarm::replay
