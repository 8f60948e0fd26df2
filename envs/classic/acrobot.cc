#include "envs/classic/acrobot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

// Floating-point contraction is off for this target (envs/CMakeLists.txt):
// each result rounds as in Gymnasium's float64 arithmetic.

namespace rlswarm::envs {
namespace {

using std::numbers::pi;

// Gymnasium's AcrobotEnv class constants and _dsdt locals.
constexpr double kDt = 0.2;  // one RK4 step over [0, dt]
constexpr double kLinkLength1 = 1.0;
constexpr double kLinkMass1 = 1.0;
constexpr double kLinkMass2 = 1.0;
constexpr double kLinkComPos1 = 0.5;  // centre of mass of link 1, from the fixed joint
constexpr double kLinkComPos2 = 0.5;  // centre of mass of link 2, from the middle joint
constexpr double kLinkMoi = 1.0;      // moment of inertia of both links
constexpr double kGravity = 9.8;
constexpr double kMaxVel1 = 4 * pi;
constexpr double kMaxVel2 = 9 * pi;
constexpr double kAvailTorque[3] = {-1.0, 0.0, 1.0};
constexpr double kInitBound = 0.1;  // reset draws each state variable from U(-0.1, 0.1)
// torque_noise_max is 0 in Gymnasium, so no noise is drawn.

// Gymnasium's observation Box is float32, so its bounds are the float32
// roundings of these values (see cartpole.cc).
constexpr double F32(double v) { return static_cast<float>(v); }

EnvSpec AcrobotSpec(std::int64_t max_episode_steps) {
  const std::vector<double> high = {1.0, 1.0, 1.0, 1.0, F32(kMaxVel1), F32(kMaxVel2)};
  EnvSpec spec;
  spec.name = "Acrobot-v1";
  spec.observation = {{6}, DType::kFloat32, {-1.0, -1.0, -1.0, -1.0, -high[4], -high[5]}, high};
  spec.action.kind = ActionKind::kDiscrete;
  spec.action.num_actions = 3;  // torque -1, 0, +1 on the middle joint
  spec.action.array = {{}, DType::kInt64, {0.0}, {2.0}};
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

// The state augmented with the torque, as Gymnasium's rk4 integrates it; the
// torque's derivative is 0, so it stays constant over the step.
struct Augmented {
  double theta1, theta2, dtheta1, dtheta2, torque;
};

// Gymnasium's _dsdt with book_or_nips = "book" (the equations of Sutton &
// Barto's book, which has a term that the NIPS paper omits). Operand order is
// Gymnasium's, so the float64 results match bit for bit (up to libm).
Augmented Derivatives(const Augmented& s) {
  constexpr double m1 = kLinkMass1, m2 = kLinkMass2, l1 = kLinkLength1;
  constexpr double lc1 = kLinkComPos1, lc2 = kLinkComPos2, i1 = kLinkMoi, i2 = kLinkMoi;
  constexpr double g = kGravity;
  const double a = s.torque;
  const double cos2 = std::cos(s.theta2);
  const double sin2 = std::sin(s.theta2);
  const double d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * cos2) + i1 + i2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + i2;
  const double phi2 = m2 * lc2 * g * std::cos(s.theta1 + s.theta2 - pi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (s.dtheta2 * s.dtheta2) * sin2 -
                      2 * m2 * l1 * lc2 * s.dtheta2 * s.dtheta1 * sin2 +
                      (m1 * lc1 + m2 * l1) * g * std::cos(s.theta1 - pi / 2) + phi2;
  const double ddtheta2 =
      (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (s.dtheta1 * s.dtheta1) * sin2 - phi2) /
      (m2 * (lc2 * lc2) + i2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {s.dtheta1, s.dtheta2, ddtheta1, ddtheta2, 0.0};
}

// y + h * k, element by element.
Augmented Euler(const Augmented& y, double h, const Augmented& k) {
  return {y.theta1 + h * k.theta1, y.theta2 + h * k.theta2, y.dtheta1 + h * k.dtheta1,
          y.dtheta2 + h * k.dtheta2, y.torque + h * k.torque};
}

// Gymnasium's wrap(): shifts by whole turns into [m, M] (both ends included).
double Wrap(double x, double m, double big_m) {
  const double diff = big_m - m;
  while (x > big_m) x = x - diff;
  while (x < m) x = x + diff;
  return x;
}

// Gymnasium's bound(): min(max(x, m), M).
double Bound(double x, double m, double big_m) { return std::min(std::max(x, m), big_m); }

}  // namespace

Acrobot::Acrobot() : Acrobot(kDefaultMaxEpisodeSteps) {}

Acrobot::Acrobot(std::int64_t max_episode_steps) : Env(AcrobotSpec(max_episode_steps)) {}

void Acrobot::ResetState() {
  // Gymnasium draws uniform(-0.1, 0.1, size=(4,)) and then casts the state to
  // float32 (`.astype(np.float32)`), so the episode starts from float32 values.
  // The floats go through an array: GCC 12's SLP vectorizer drops the
  // double -> float -> double round trip of four such casts written as
  // separate assignments when AVX is enabled (seen with -march=native).
  float start[4];
  for (float& v : start) v = static_cast<float>(rng().Uniform(-kInitBound, kInitBound));
  state_ = {start[0], start[1], start[2], start[3]};
}

Env::Transition Acrobot::Advance(std::int64_t action) {
  // One classical RK4 step over [0, dt] (Gymnasium's rk4 with t = [0, dt]).
  const Augmented y0 = {state_.theta1, state_.theta2, state_.dtheta1, state_.dtheta2,
                        kAvailTorque[action]};
  constexpr double dt2 = kDt / 2.0;
  const Augmented k1 = Derivatives(y0);
  const Augmented k2 = Derivatives(Euler(y0, dt2, k1));
  const Augmented k3 = Derivatives(Euler(y0, dt2, k2));
  const Augmented k4 = Derivatives(Euler(y0, kDt, k3));
  constexpr double h = kDt / 6.0;
  auto rk4 = [](double y, double a, double b, double c, double d) {
    return y + h * (a + 2 * b + 2 * c + d);
  };
  state_.theta1 = Wrap(rk4(y0.theta1, k1.theta1, k2.theta1, k3.theta1, k4.theta1), -pi, pi);
  state_.theta2 = Wrap(rk4(y0.theta2, k1.theta2, k2.theta2, k3.theta2, k4.theta2), -pi, pi);
  state_.dtheta1 =
      Bound(rk4(y0.dtheta1, k1.dtheta1, k2.dtheta1, k3.dtheta1, k4.dtheta1), -kMaxVel1, kMaxVel1);
  state_.dtheta2 =
      Bound(rk4(y0.dtheta2, k1.dtheta2, k2.dtheta2, k3.dtheta2, k4.dtheta2), -kMaxVel2, kMaxVel2);

  // The tip is more than one link length above the fixed joint.
  const bool terminated = -std::cos(state_.theta1) - std::cos(state_.theta2 + state_.theta1) > 1.0;
  return {terminated ? 0.0f : -1.0f, terminated};
}

void Acrobot::WriteObservation(std::byte* out) const {
  const float obs[6] = {
      static_cast<float>(std::cos(state_.theta1)), static_cast<float>(std::sin(state_.theta1)),
      static_cast<float>(std::cos(state_.theta2)), static_cast<float>(std::sin(state_.theta2)),
      static_cast<float>(state_.dtheta1),          static_cast<float>(state_.dtheta2)};
  std::memcpy(out, obs, sizeof(obs));
}

}  // namespace rlswarm::envs
