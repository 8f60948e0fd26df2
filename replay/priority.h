#pragma once

// What a priority may be, checked in one place for every way one enters
// replay: inserts, priority updates, writers' batches and checkpoints.

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include "common/errors.h"

namespace rlswarm::replay {

inline bool IsValidPriority(double priority) { return std::isfinite(priority) && priority >= 0; }

// Throws InvalidArgument "<what>[i] = <p>: priorities must be finite and >= 0"
// for the first invalid one.
inline void CheckPriorities(std::span<const double> priorities, const std::string& what) {
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    if (!IsValidPriority(priorities[i])) {
      throw InvalidArgument(what + "[" + std::to_string(i) + "] = " +
                            std::to_string(priorities[i]) + ": priorities must be finite and >= 0");
    }
  }
}

}  // namespace rlswarm::replay
