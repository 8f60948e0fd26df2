#include "envs/classic/pendulum.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <span>
#include <vector>

// Floating-point contraction is off for this target (envs/CMakeLists.txt):
// each result rounds as in Gymnasium's float64 arithmetic.

namespace rlswarm::envs {
namespace {

using std::numbers::pi;

// Gymnasium's PendulumEnv.__init__ with its default g = 10.
constexpr double kMaxSpeed = 8;
constexpr float kMaxTorque = 2.0f;
constexpr double kDt = 0.05;
constexpr double kG = 10.0;
constexpr double kM = 1.0;
constexpr double kL = 1.0;
// Reset draws theta from U(-pi, pi) and theta_dot from U(-1, 1).
constexpr double kInitTheta = pi;
constexpr double kInitThetaDot = 1.0;

EnvSpec PendulumSpec(std::int64_t max_episode_steps) {
  EnvSpec spec;
  spec.name = "Pendulum-v1";
  spec.observation = {{3}, DType::kFloat32, {-1.0, -1.0, -kMaxSpeed}, {1.0, 1.0, kMaxSpeed}};
  spec.action.kind = ActionKind::kContinuous;
  spec.action.array = {{1}, DType::kFloat32, {-kMaxTorque}, {kMaxTorque}};  // torque [N m]
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

// Gymnasium's angle_normalize, ((x + pi) % (2 pi)) - pi, with the floored
// modulo of Python and NumPy (the result takes the divisor's sign), so the
// angle lands in [-pi, pi).
double AngleNormalize(double x) {
  constexpr double kTwoPi = 2 * pi;
  const double shifted = x + pi;
  // fmod is exact, and returns its argument unchanged when that is already in
  // [0, 2 pi), the common case; the slow call is skipped then.
  double mod = shifted >= 0 && shifted < kTwoPi ? shifted : std::fmod(shifted, kTwoPi);
  if (mod < 0) mod += kTwoPi;
  // NumPy turns a zero `mod` into +0; its sign cannot change mod - pi.
  return mod - pi;
}

}  // namespace

Pendulum::Pendulum() : Pendulum(kDefaultMaxEpisodeSteps) {}

Pendulum::Pendulum(std::int64_t max_episode_steps) : Env(PendulumSpec(max_episode_steps)) {}

void Pendulum::ResetState() {
  // Gymnasium draws uniform(low=-high, high=high) with high = [pi, 1]: theta first.
  state_.theta = rng().Uniform(-kInitTheta, kInitTheta);
  state_.theta_dot = rng().Uniform(-kInitThetaDot, kInitThetaDot);
}

Env::Transition Pendulum::Advance(std::span<const float> action) {
  const double th = state_.theta;
  const double thdot = state_.theta_dot;
  // Gymnasium clips the torque; Env has already rejected anything outside
  // [-2, 2], so this keeps the rule without changing any accepted action.
  const float u = std::clamp(action[0], -kMaxTorque, kMaxTorque);
  // u**2 of a float32 torque is a float32 square in NumPy; the rest is float64.
  const float u_squared = u * u;
  const double an = AngleNormalize(th);
  const double costs = an * an + 0.1 * (thdot * thdot) + 0.001 * static_cast<double>(u_squared);

  double newthdot = thdot + (3 * kG / (2 * kL) * std::sin(th) + 3.0 / (kM * (kL * kL)) * u) * kDt;
  newthdot = std::clamp(newthdot, -kMaxSpeed, kMaxSpeed);
  const double newth = th + newthdot * kDt;
  state_ = {newth, newthdot};

  // The episode never terminates; the time limit truncates it.
  return {static_cast<float>(-costs), false};
}

void Pendulum::WriteObservation(std::byte* out) const {
  const float obs[3] = {static_cast<float>(std::cos(state_.theta)),
                        static_cast<float>(std::sin(state_.theta)),
                        static_cast<float>(state_.theta_dot)};
  std::memcpy(out, obs, sizeof(obs));
}

}  // namespace rlswarm::envs
