#pragma once

// The Ape-X DQN loss (Horgan et al. 2018, section 3 and appendix): double
// Q-learning (van Hasselt et al. 2016) on n-step transitions, a Huber loss
// weighted by prioritized replay's importance-sampling weights (Schaul et al.
// 2016, section 3.4), and the new priorities |TD error| + epsilon.
//
//   a*     = argmax_a Q_online(s', a)
//   target = reward + discount * Q_target(s', a*)      (no gradient)
//   td     = target - Q_online(s, action)
//   loss   = mean_i w_i * huber(td_i)                   (delta = 1: Huber, "smooth L1")
//
// `reward` is already the discounted n-step sum and `discount` gamma^n' (0
// when the episode terminated): both come from replay/service/transition.h,
// so n is the actors' business and the loss never sees gamma.
//
// Pure tensor code: no model, no collective. Thread-compatible.

#include <ATen/core/Tensor.h>

namespace rlswarm::learner {

struct DqnLossOptions {
  double huber_delta = 1.0;
  // Added to |TD| so that no item's priority is 0 (PER, section 3.3).
  double priority_epsilon = 1e-6;
  // false: plain DQN target max_a Q_target(s', a) (kept for comparisons).
  bool double_q = true;
  // Throws InvalidArgument on huber_delta <= 0 or priority_epsilon < 0.
  void Validate() const;
};

// One rank's share of a batch, B rows. Floating tensors may be any floating
// dtype; they are converted to q's dtype.
struct DqnTargets {
  at::Tensor action;    // [B] integer
  at::Tensor reward;    // [B]
  at::Tensor discount;  // [B]
  at::Tensor weights;   // [B] IS weights; undefined = all 1
};

struct DqnLossResult {
  at::Tensor loss;        // scalar; carries q's graph
  at::Tensor td_error;    // [B], detached
  at::Tensor priorities;  // [B] float64, |td| + epsilon, detached
};

// q: Q_online(s) [B, A] (autograd); next_online: Q_online(s') [B, A] and
// next_target: Q_target(s') [B, A], both used without gradient.
// Throws InvalidArgument on shape mismatches.
DqnLossResult DqnLoss(const at::Tensor& q, const at::Tensor& next_online,
                      const at::Tensor& next_target, const DqnTargets& batch,
                      const DqnLossOptions& options);

}  // namespace rlswarm::learner
