#include "replay/selectors/interface.h"

#include <cmath>
#include <string>

#include "common/errors.h"
#include "replay/selectors/prioritized.h"
#include "replay/selectors/uniform.h"

namespace rlswarm::replay {

std::string_view SelectorKindName(SelectorKind kind) {
  return kind == SelectorKind::kUniform ? "uniform" : "prioritized";
}

SelectorKind ParseSelectorKind(std::string_view name) {
  if (name == "uniform") return SelectorKind::kUniform;
  if (name == "prioritized") return SelectorKind::kPrioritized;
  throw InvalidArgument("unknown selector '" + std::string(name) +
                        "' (known: uniform, prioritized)");
}

void SelectorOptions::Validate() const {
  if (!std::isfinite(alpha) || alpha < 0) {
    throw InvalidArgument("selector: alpha must be finite and >= 0, got " + std::to_string(alpha));
  }
  if (!std::isfinite(beta) || beta < 0 || beta > 1) {
    throw InvalidArgument("selector: beta must be in [0, 1], got " + std::to_string(beta));
  }
}

std::unique_ptr<Selector> MakeSelector(const SelectorOptions& options, std::int64_t capacity) {
  if (options.kind == SelectorKind::kPrioritized) {
    return std::make_unique<PrioritizedSelector>(capacity, options.alpha);
  }
  return std::make_unique<UniformSelector>(capacity);
}

}  // namespace rlswarm::replay
