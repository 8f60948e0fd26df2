#include "envs/env.h"

#include <cmath>
#include <random>
#include <string>

#include "common/errors.h"

namespace rlswarm::envs {

Env::Env(EnvSpec spec) : spec_(std::move(spec)) {
  spec_.Validate();
  std::random_device entropy;
  rng_.Seed((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
}

void Env::CheckBuffer(std::span<std::byte> observation) const {
  if (observation.size() < spec_.observation.NumBytes()) {
    throw InvalidArgument(spec_.name + ": observation buffer has " +
                          std::to_string(observation.size()) + " bytes, needs " +
                          std::to_string(spec_.observation.NumBytes()));
  }
}

void Env::CheckCanStep() const {
  if (needs_reset_) {
    throw FailedPrecondition(spec_.name + (ever_reset_
                                               ? ": step after the episode ended; call Reset"
                                               : ": step before the first Reset"));
  }
}

void Env::Reset(std::optional<std::uint64_t> seed, std::span<std::byte> observation) {
  CheckBuffer(observation);
  if (seed) rng_.Seed(*seed);
  reset_seed_ = seed;
  ResetState();
  elapsed_steps_ = 0;
  needs_reset_ = false;
  ever_reset_ = true;
  WriteObservation(observation.data());
}

StepResult Env::Step(std::int64_t action, std::span<std::byte> observation) {
  if (spec_.action.kind != ActionKind::kDiscrete) {
    throw InvalidArgument(spec_.name + ": has continuous actions, got a discrete action");
  }
  if (action < 0 || action >= spec_.action.num_actions) {
    throw InvalidArgument(spec_.name + ": action " + std::to_string(action) + " out of range [0, " +
                          std::to_string(spec_.action.num_actions) + ")");
  }
  CheckBuffer(observation);
  CheckCanStep();
  return Finish(Advance(action), observation);
}

StepResult Env::Step(std::span<const float> action, std::span<std::byte> observation) {
  const ArraySpec& a = spec_.action.array;
  if (spec_.action.kind != ActionKind::kContinuous) {
    throw InvalidArgument(spec_.name + ": has discrete actions, got a continuous action");
  }
  if (static_cast<std::int64_t>(action.size()) != a.NumElements()) {
    throw InvalidArgument(spec_.name + ": action has " + std::to_string(action.size()) +
                          " elements, expected " + std::to_string(a.NumElements()));
  }
  for (std::int64_t i = 0; i < a.NumElements(); ++i) {
    const float v = action[i];
    if (!(v >= a.Low(i) && v <= a.High(i))) {  // also rejects NaN
      throw InvalidArgument(spec_.name + ": action element " + std::to_string(i) + " = " +
                            std::to_string(v) + " outside [" + std::to_string(a.Low(i)) + ", " +
                            std::to_string(a.High(i)) + "]");
    }
  }
  CheckBuffer(observation);
  CheckCanStep();
  return Finish(Advance(action), observation);
}

StepResult Env::Finish(Transition t, std::span<std::byte> observation) {
  ++elapsed_steps_;
  StepResult result{
      t.reward, t.terminated,
      t.truncated || (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps)};
  needs_reset_ = result.terminated || result.truncated;
  WriteObservation(observation.data());
  return result;
}

void Env::Observe(std::span<std::byte> observation) const {
  CheckBuffer(observation);
  if (!ever_reset_) throw FailedPrecondition(spec_.name + ": observe before the first Reset");
  WriteObservation(observation.data());
}

Env::Transition Env::Advance(std::int64_t) {
  throw Internal(spec_.name + ": discrete Advance not implemented");
}

Env::Transition Env::Advance(std::span<const float>) {
  throw Internal(spec_.name + ": continuous Advance not implemented");
}

}  // namespace rlswarm::envs
