#pragma once

// Specs: what an environment's observations and actions look like. Validated
// at construction (EnvSpec::Validate) so that a wrong spec fails when an env
// is registered, not when a learner meets its first malformed batch.

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace rlswarm::envs {

// A dense array: shape, element type and per-element bounds (row-major, one
// bound per element, or a single bound broadcast to all elements). Unbounded
// dimensions use +-infinity, as Gymnasium's Box does.
struct ArraySpec {
  std::vector<std::int64_t> shape;
  DType dtype = DType::kFloat32;
  std::vector<double> low;
  std::vector<double> high;

  std::int64_t NumElements() const;
  std::size_t NumBytes() const {
    return static_cast<std::size_t>(NumElements()) * DTypeSize(dtype);
  }
  double Low(std::int64_t i) const { return low.size() == 1 ? low[0] : low[i]; }
  double High(std::int64_t i) const { return high.size() == 1 ? high[0] : high[i]; }
  // Throws InvalidArgument if shape, bounds or their sizes disagree; `what`
  // names the spec in the message.
  void Validate(const std::string& what) const;
};

enum class ActionKind { kDiscrete, kContinuous };

// Discrete actions are one int64 per env in [0, num_actions). Continuous
// actions are `array` (float32, bounded); out-of-bound values are an error,
// never silently clipped, so a policy bug shows up at once.
struct ActionSpec {
  ActionKind kind = ActionKind::kDiscrete;
  std::int64_t num_actions = 0;  // discrete only
  ArraySpec array;               // continuous: shape, float32, bounds; discrete: scalar int64
};

struct EnvSpec {
  std::string name;
  ArraySpec observation;
  ActionSpec action;
  // Episodes are truncated after this many steps (Gymnasium's TimeLimit);
  // 0 means no limit.
  std::int64_t max_episode_steps = 0;

  void Validate() const;
};

}  // namespace rlswarm::envs
