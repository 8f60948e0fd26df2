#include "envs/classic/cartpole.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

// Floating-point contraction is off for this target (envs/CMakeLists.txt):
// each result rounds as in Gymnasium's float64 arithmetic.

namespace rlswarm::envs {
namespace {

// Gymnasium's CartPoleEnv.__init__. The derived constants are computed the way
// Gymnasium computes them, so that every intermediate float64 value matches.
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart;
constexpr double kLength = 0.5;  // half the pole's length
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;                                        // seconds per step
constexpr double kThetaThreshold = 12 * 2 * std::numbers::pi / 360;  // 12 degrees
constexpr double kXThreshold = 2.4;
constexpr double kInitBound = 0.05;  // reset draws each state variable from U(-0.05, 0.05)

// Gymnasium's observation Box is float32, so its bounds are the float32
// roundings of these values; a float32 observation compares against them
// exactly as it does in Gymnasium.
constexpr double F32(double v) { return static_cast<float>(v); }

EnvSpec CartPoleSpec(std::int64_t max_episode_steps) {
  // Gymnasium uses float32's max for the unbounded velocities; we use +inf,
  // which is how EnvSpec marks an unbounded dimension (README.md).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::vector<double> high = {F32(kXThreshold * 2), kInf, F32(kThetaThreshold * 2), kInf};
  EnvSpec spec;
  spec.name = "CartPole-v1";
  spec.observation = {{4}, DType::kFloat32, {-high[0], -high[1], -high[2], -high[3]}, high};
  spec.action.kind = ActionKind::kDiscrete;
  spec.action.num_actions = 2;  // 0: push left, 1: push right
  spec.action.array = {{}, DType::kInt64, {0.0}, {1.0}};
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace

CartPole::CartPole() : CartPole(kDefaultMaxEpisodeSteps) {}

CartPole::CartPole(std::int64_t max_episode_steps) : Env(CartPoleSpec(max_episode_steps)) {}

void CartPole::ResetState() {
  // Gymnasium draws uniform(low, high, size=(4,)): x, x_dot, theta, theta_dot in order.
  state_.x = rng().Uniform(-kInitBound, kInitBound);
  state_.x_dot = rng().Uniform(-kInitBound, kInitBound);
  state_.theta = rng().Uniform(-kInitBound, kInitBound);
  state_.theta_dot = rng().Uniform(-kInitBound, kInitBound);
}

Env::Transition CartPole::Advance(std::int64_t action) {
  // Equations of Florian (2007), "Correct equations for the dynamics of the
  // cart-pole system", as written in Gymnasium's step(), operand order kept.
  State& s = state_;
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(s.theta);
  const double sintheta = std::sin(s.theta);
  const double temp =
      (force + kPoleMassLength * (s.theta_dot * s.theta_dot) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;

  // Gymnasium's default kinematics_integrator "euler": positions advance with
  // the old velocities.
  s.x = s.x + kTau * s.x_dot;
  s.x_dot = s.x_dot + kTau * xacc;
  s.theta = s.theta + kTau * s.theta_dot;
  s.theta_dot = s.theta_dot + kTau * thetaacc;

  // Strict comparisons: x = +-2.4 exactly is still alive, as in Gymnasium.
  const bool terminated = s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold ||
                          s.theta > kThetaThreshold;
  // +1 on every step, the terminating one included (Gymnasium's 0.0 reward is
  // only for steps past termination, which Env forbids).
  return {1.0f, terminated};
}

void CartPole::WriteObservation(std::byte* out) const {
  const float obs[4] = {static_cast<float>(state_.x), static_cast<float>(state_.x_dot),
                        static_cast<float>(state_.theta), static_cast<float>(state_.theta_dot)};
  std::memcpy(out, obs, sizeof(obs));
}

}  // namespace rlswarm::envs
