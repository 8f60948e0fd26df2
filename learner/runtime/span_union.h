#pragma once

// The length of the union of time spans that arrive in any order: how long at
// least one collective was in flight, where summing the spans would count
// every moment that several collectives shared (queued behind each other or
// running side by side) once per collective.
//
// Spans are kept merged and disjoint; once more than kMaxKept are kept, the
// oldest is folded into the total and a later span reaching back before the
// folded region's end is clipped there, so no moment is ever counted twice.
// The total is exact while fewer than kMaxKept spans end during any one span
// (a few collectives are in flight at once in ShardedModel).
//
// Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>

namespace rlswarm::learner {

class SpanUnion {
 public:
  static constexpr std::size_t kMaxKept = 64;
  // Adds [begin_ns, end_ns); an empty or reversed span adds nothing.
  void Add(int64_t begin_ns, int64_t end_ns);
  // Seconds covered by at least one span added since Reset().
  double Seconds() const { return 1e-9 * static_cast<double>(covered_ns_); }
  void Reset();

 private:
  std::map<int64_t, int64_t> kept_;  // begin -> end, disjoint, not touching
  int64_t covered_ns_ = 0;
  int64_t folded_until_ns_ = INT64_MIN;
};

}  // namespace rlswarm::learner
