#include "learner/runtime/span_union.h"

#include <algorithm>

namespace rlswarm::learner {

void SpanUnion::Add(int64_t begin_ns, int64_t end_ns) {
  begin_ns = std::max(begin_ns, folded_until_ns_);
  if (end_ns <= begin_ns) return;
  // The first kept span that could touch [begin, end): the last one
  // starting at or before begin, if it reaches begin.
  auto it = kept_.upper_bound(begin_ns);
  if (it != kept_.begin() && std::prev(it)->second >= begin_ns) --it;
  // Swallow every kept span that overlaps or touches the new one.
  while (it != kept_.end() && it->first <= end_ns) {
    begin_ns = std::min(begin_ns, it->first);
    end_ns = std::max(end_ns, it->second);
    covered_ns_ -= it->second - it->first;
    it = kept_.erase(it);
  }
  kept_.emplace(begin_ns, end_ns);
  covered_ns_ += end_ns - begin_ns;
  while (kept_.size() > kMaxKept) {
    folded_until_ns_ = kept_.begin()->second;
    kept_.erase(kept_.begin());
  }
}

void SpanUnion::Reset() {
  kept_.clear();
  covered_ns_ = 0;
  folded_until_ns_ = INT64_MIN;
}

}  // namespace rlswarm::learner
