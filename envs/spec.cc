#include "envs/spec.h"

#include <cmath>

#include "common/errors.h"

namespace rlswarm::envs {

std::int64_t ArraySpec::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

void ArraySpec::Validate(const std::string& what) const {
  for (std::int64_t d : shape) {
    if (d <= 0) throw InvalidArgument(what + ": every dimension must be positive");
  }
  const auto n = static_cast<std::size_t>(NumElements());
  auto check_bounds = [&](const std::vector<double>& b, const char* name) {
    if (b.size() != 1 && b.size() != n) {
      throw InvalidArgument(what + ": " + name + " has " + std::to_string(b.size()) +
                            " bounds for " + std::to_string(n) + " elements");
    }
  };
  check_bounds(low, "low");
  check_bounds(high, "high");
  for (std::int64_t i = 0; i < NumElements(); ++i) {
    if (std::isnan(Low(i)) || std::isnan(High(i)) || Low(i) > High(i)) {
      throw InvalidArgument(what + ": low > high at element " + std::to_string(i));
    }
  }
}

void EnvSpec::Validate() const {
  observation.Validate(name + " observation");
  action.array.Validate(name + " action");
  if (action.kind == ActionKind::kDiscrete) {
    if (action.num_actions <= 0) throw InvalidArgument(name + ": no discrete actions");
    if (action.array.dtype != DType::kInt64) throw InvalidArgument(name + ": actions are int64");
  } else if (action.array.dtype != DType::kFloat32) {
    throw InvalidArgument(name + ": continuous actions are float32");
  }
  if (max_episode_steps < 0) throw InvalidArgument(name + ": max_episode_steps < 0");
}

}  // namespace rlswarm::envs
