#pragma once

// The environment interface (Gymnasium's API, in C++ and without allocation).
//
// Data path: the caller owns the observation memory; Reset and Step write the
// observation into it, so a VectorEnv can hand LibTorch one contiguous batch.
//
// Env is a non-virtual interface: the public methods check every input
// (action kind and range, buffer sizes, stepping a finished episode) and keep
// the episode clock (Gymnasium's TimeLimit); subclasses implement only the
// dynamics. Not thread-safe: one thread steps an env at a time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "common/random.h"
#include "envs/spec.h"

namespace rlswarm::envs {

struct StepResult {
  float reward = 0.0f;
  // The episode reached a terminal state of the MDP: do not bootstrap.
  bool terminated = false;
  // The episode was cut by the time limit: bootstrap from the final observation.
  bool truncated = false;
};

class Env {
 public:
  explicit Env(EnvSpec spec);  // validates the spec
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  const EnvSpec& spec() const { return spec_; }

  // Starts a new episode and writes its first observation. With a seed, the
  // env's generator is reseeded first (the episode then depends only on the
  // seed); without one it continues the current stream. An env that was never
  // seeded starts from a seed drawn from std::random_device, as Gymnasium does.
  // Throws InvalidArgument if `observation` is smaller than the spec says.
  void Reset(std::optional<std::uint64_t> seed, std::span<std::byte> observation);

  // Advances one step with a discrete action in [0, num_actions) and writes
  // the next observation. When the step ends the episode (terminated or
  // truncated), that observation is the final one and the env must be Reset
  // before the next Step. Throws InvalidArgument for an out-of-range action,
  // a continuous env or a short buffer, and FailedPrecondition for a step
  // before Reset or after the episode ended. A failed call changes nothing.
  StepResult Step(std::int64_t action, std::span<std::byte> observation);

  // As above, for continuous actions (spec().action.array elements, each
  // within its bounds; NaN is out of bounds).
  StepResult Step(std::span<const float> action, std::span<std::byte> observation);

  // Writes the current observation again.
  void Observe(std::span<std::byte> observation) const;

  bool needs_reset() const { return needs_reset_; }
  std::int64_t elapsed_steps() const { return elapsed_steps_; }

 protected:
  // What one step of the dynamics produced; the time limit is added by Env.
  struct Transition {
    float reward = 0.0f;
    bool terminated = false;
    // The env cut the episode itself; Env adds its own time limit to this.
    bool truncated = false;
  };

  Rng& rng() { return rng_; }
  // The seed the Reset in progress was given (nullopt: continue the stream),
  // for envs whose randomness is not drawn from rng() (plugins).
  std::optional<std::uint64_t> reset_seed() const { return reset_seed_; }

  // Draws the initial state of a new episode from rng().
  virtual void ResetState() = 0;
  // One step of the dynamics; the action is already validated. Discrete envs
  // override the first, continuous envs the second.
  virtual Transition Advance(std::int64_t action);
  virtual Transition Advance(std::span<const float> action);
  // Writes the current observation (spec().observation.NumBytes() bytes).
  virtual void WriteObservation(std::byte* out) const = 0;

 private:
  void CheckBuffer(std::span<std::byte> observation) const;
  void CheckCanStep() const;
  StepResult Finish(Transition t, std::span<std::byte> observation);

  EnvSpec spec_;
  Rng rng_;
  std::optional<std::uint64_t> reset_seed_;
  bool needs_reset_ = true;
  bool ever_reset_ = false;
  std::int64_t elapsed_steps_ = 0;
};

}  // namespace rlswarm::envs
