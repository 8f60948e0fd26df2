#include "envs/classic/mountain_car.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

// Floating-point contraction is off for this target (envs/CMakeLists.txt):
// each result rounds as in Gymnasium's float64 arithmetic.

namespace rlswarm::envs {
namespace {

// Gymnasium's MountainCarEnv.__init__ (goal_velocity left at its default 0).
constexpr double kMinPosition = -1.2;
constexpr double kMaxPosition = 0.6;
constexpr double kMaxSpeed = 0.07;
constexpr double kGoalPosition = 0.5;
constexpr double kGoalVelocity = 0.0;
constexpr double kForce = 0.001;
constexpr double kGravity = 0.0025;
// Reset draws the position from U(-0.6, -0.4); the velocity starts at 0.
constexpr double kInitLow = -0.6;
constexpr double kInitHigh = -0.4;

// Gymnasium's observation Box is float32, so its bounds are the float32
// roundings of these values. This matters here: a position clipped to -1.2
// becomes float32(-1.2) < -1.2, which must still be inside the bounds.
constexpr double F32(double v) { return static_cast<float>(v); }

EnvSpec MountainCarSpec(std::int64_t max_episode_steps) {
  EnvSpec spec;
  spec.name = "MountainCar-v0";
  spec.observation = {{2},
                      DType::kFloat32,
                      {F32(kMinPosition), F32(-kMaxSpeed)},
                      {F32(kMaxPosition), F32(kMaxSpeed)}};
  spec.action.kind = ActionKind::kDiscrete;
  spec.action.num_actions = 3;  // 0: accelerate left, 1: none, 2: accelerate right
  spec.action.array = {{}, DType::kInt64, {0.0}, {2.0}};
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace

MountainCar::MountainCar() : MountainCar(kDefaultMaxEpisodeSteps) {}

MountainCar::MountainCar(std::int64_t max_episode_steps)
    : Env(MountainCarSpec(max_episode_steps)) {}

void MountainCar::ResetState() {
  state_.position = rng().Uniform(kInitLow, kInitHigh);
  state_.velocity = 0.0;
}

Env::Transition MountainCar::Advance(std::int64_t action) {
  // Gymnasium's step(), operand order kept so float64 results match bit for
  // bit (`velocity += a + b` adds the parenthesised sum).
  double position = state_.position;
  double velocity = state_.velocity;
  velocity =
      velocity + (static_cast<double>(action - 1) * kForce + std::cos(3 * position) * (-kGravity));
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position = position + velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  // An inelastic collision with the left wall stops the car. The right end
  // needs no such rule: the goal (0.5) lies before it.
  if (position == kMinPosition && velocity < 0) velocity = 0.0;
  state_ = {position, velocity};

  const bool terminated = position >= kGoalPosition && velocity >= kGoalVelocity;
  return {-1.0f, terminated};
}

void MountainCar::WriteObservation(std::byte* out) const {
  const float obs[2] = {static_cast<float>(state_.position), static_cast<float>(state_.velocity)};
  std::memcpy(out, obs, sizeof(obs));
}

}  // namespace rlswarm::envs
