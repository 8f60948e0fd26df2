#pragma once

// The TD3 losses (Fujimoto et al. 2018, "Addressing Function Approximation
// Error in Actor-Critic Methods", Algorithm 1) on n-step transitions with
// prioritized replay's importance-sampling weights, as Ape-X DPG trains its
// critic (Horgan et al. 2018, appendix).
//
//   a'     = clip(mu_target(s') + clip(sigma * half * eps, -c * half, c * half), low, high)
//            eps ~ N(0, 1)                               (target policy smoothing)
//   y      = reward + discount * min(Q1_target, Q2_target)(s', a')   (clipped double Q)
//   critic = mean_i w_i * ((y - Q1(s, a))^2 + (y - Q2(s, a))^2)
//   actor  = -mean_i Q1(s, mu(s))                          (every policy_delay updates)
//   priority = |y - Q1(s, a)| + epsilon
//
// sigma and c are in units of the action's half-range ((high - low) / 2), so
// the TD3 paper's 0.2 and 0.5 (for actions in [-1, 1]) mean the same on any
// bounds. `reward` is the discounted n-step sum and `discount` gamma^n (0 at
// a terminal), as in dqn_loss.h.
//
// Pure tensor code: no model, no collective. Thread-compatible.

#include <ATen/core/Tensor.h>

namespace rlswarm::learner {

struct Td3LossOptions {
  double policy_noise = 0.2;  // sigma
  double noise_clip = 0.5;    // c
  double priority_epsilon = 1e-6;
  // Throws InvalidArgument naming the bad option (negative values).
  void Validate() const;
};

// low, high: [A] (any floating dtype; converted to the actions').
struct ActionBounds {
  at::Tensor low;
  at::Tensor high;
};

// a' above from the target policy's actions [B, A] and standard normal
// noise of the same shape (drawn by the caller from a seeded generator).
at::Tensor SmoothTargetActions(const at::Tensor& target_actions, const at::Tensor& standard_noise,
                               const ActionBounds& bounds, const Td3LossOptions& options);

struct Td3Targets {
  at::Tensor reward;    // [B]
  at::Tensor discount;  // [B]
  at::Tensor weights;   // [B] IS weights; undefined = all 1
};

struct Td3CriticLossResult {
  at::Tensor loss;        // scalar; carries q's graph
  at::Tensor td_error;    // [B] y - Q1(s, a), detached
  at::Tensor priorities;  // [B] float64, |td| + epsilon, detached
};

// q: the twin critics at (s, a) [B, 2] (autograd); next_target_q: the target
// critics at (s', a') [B, 2], used without gradient. Throws InvalidArgument
// on shape mismatches.
Td3CriticLossResult Td3CriticLoss(const at::Tensor& q, const at::Tensor& next_target_q,
                                  const Td3Targets& batch, const Td3LossOptions& options);

// -mean Q1(s, mu(s)) from the critics at the policy's actions [B, 2].
at::Tensor Td3ActorLoss(const at::Tensor& q_of_policy);

}  // namespace rlswarm::learner
