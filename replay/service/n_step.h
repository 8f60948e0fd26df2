#pragma once

// NStepAccumulator: turns the steps of M parallel envs into n-step
// transitions with Ape-X initial priorities (Horgan et al. 2018, section 3
// and appendix F: the actor computes priorities from its own Q estimates).
//
// For the step taken from s_t with action a_t in env e, the transition is
//   reward    R = sum_{k < m} gamma^k r_{t+k}
//   discount  gamma^m, or 0 if the episode terminated within those m steps
//   next      s_{t+m}
// with m = n, or fewer when the episode ended first:
//   * terminated (a terminal state): every pending step of the episode is
//     emitted at once with discount 0; no bootstrap.
//   * truncated (a time limit): every pending step is emitted with discount
//     gamma^m and next = the episode's final observation, bootstrapped from
//     it (Pardo et al. 2018, "Time limits in RL"); the actor evaluates the
//     final observations of truncated envs in one extra batch.
// The initial priority is |R + discount * V(next) - Q(s_t, a_t)|, with V(s)
// = max_a Q(s, a) from the actor's network; V(next) arrives after the step:
// from the next forward pass over the current observations
// (SetCurrentValues), or from the extra pass over final observations
// (SetFinalValues). A transition is ready once its priority is known.
//
// Per actor step:
//   values of the current observations -> SetCurrentValues(values)
//   choose actions, step the envs       -> Observe(...)
//   if !truncated_envs().empty()         -> SetFinalValues(values of their final observations)
//   ready() -> send, then ClearReady()
//
// Not thread safe: one actor thread owns it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rlswarm::replay {

struct NStepOptions {
  int n = 3;
  double gamma = 0.99;
  // > 0: every step's reward is clipped to [-reward_clip, reward_clip]
  // before it enters R (DQN's Atari setting: 1). 0: rewards as they are.
  double reward_clip = 0;
  // Throws InvalidArgument unless n >= 1, 0 <= gamma <= 1 and reward_clip
  // >= 0.
  void Validate() const;
};

// Ready transitions, column-wise (row i of each column is transition i).
struct TransitionColumns {
  std::vector<std::byte> observation;  // obs_bytes per row
  std::vector<std::byte> action;       // action_bytes per row
  std::vector<float> reward;
  std::vector<float> discount;
  std::vector<std::byte> next_observation;
  std::vector<double> priority;
  std::vector<std::int64_t> policy_version;  // of the policy that chose a_t
  std::int64_t size() const { return static_cast<std::int64_t>(reward.size()); }
  void Clear();
};

// What the envs did in one step, all rows [M] (views, not kept).
struct EnvStep {
  std::span<const std::byte> observations;  // s_t, M * obs_bytes
  std::span<const std::byte> actions;       // a_t, M * action_bytes
  std::span<const float> q_taken;           // Q(s_t, a_t)
  std::span<const float> rewards;           // r_t
  std::span<const std::uint8_t> terminated;
  std::span<const std::uint8_t> truncated;
  std::span<const std::byte> next_observations;   // s_{t+1} (after auto-reset: the new episode's)
  std::span<const std::byte> final_observations;  // rows valid where terminated or truncated
  std::int64_t policy_version = 0;
  // Optional, [M]: envs whose step was a next-step autoreset (Gymnasium's
  // default mode): the action was ignored and s_{t+1} starts a new episode,
  // so the step is no transition; the episode before it was complete.
  std::span<const std::uint8_t> skipped = {};
};

class NStepAccumulator {
 public:
  // Throws InvalidArgument for bad options or sizes.
  NStepAccumulator(NStepOptions options, std::int64_t num_envs, std::size_t obs_bytes,
                   std::size_t action_bytes);

  // V of each env's current observation (the s_{t+1} of the last Observe),
  // [M]. Completes the transitions that bootstrap from it.
  void SetCurrentValues(std::span<const float> values);
  // Records one step of every env; emits the transitions it completes (see
  // the class comment). Throws InvalidArgument on wrong sizes, or
  // FailedPrecondition if transitions still wait for SetCurrentValues /
  // SetFinalValues from the previous step.
  void Observe(const EnvStep& step);
  // The envs whose episode was truncated in the last Observe, in order.
  const std::vector<std::int64_t>& truncated_envs() const { return truncated_envs_; }
  // V of the final observation of each env in truncated_envs().
  void SetFinalValues(std::span<const float> values);

  const TransitionColumns& ready() const { return ready_; }
  void ClearReady() { ready_.Clear(); }
  // Moves the ready transitions out (to hand them on without a copy) and
  // starts new columns with room for as many rows. Throws
  // FailedPrecondition while transitions wait for a value: their rows are
  // in ready() and must get their priorities first.
  TransitionColumns TakeReady();
  // Forgets every env's pending steps (its envs were restarted: no step of
  // theirs will follow). Throws FailedPrecondition while transitions wait for
  // a value.
  void DropPending();
  // Pending steps dropped by DropPending so far.
  std::int64_t dropped() const { return dropped_; }

  // Transitions emitted but waiting for a value.
  std::int64_t waiting() const {
    return static_cast<std::int64_t>(waiting_current_.size() + waiting_final_.size());
  }

 private:
  // The pending steps of every env in one ring per env (n slots), so the
  // hot path never allocates: slot k of env e holds step start_[e] + k.
  struct PendingStep {
    float reward;
    float q_taken;
    std::int64_t policy_version;
  };
  std::byte* ObservationSlot(std::int64_t e, std::int64_t k) {
    return pending_obs_.data() +
           (static_cast<std::size_t>(e) * options_.n + Ring(e, k)) * obs_bytes_;
  }
  std::byte* ActionSlot(std::int64_t e, std::int64_t k) {
    return pending_actions_.data() +
           (static_cast<std::size_t>(e) * options_.n + Ring(e, k)) * action_bytes_;
  }
  PendingStep& StepSlot(std::int64_t e, std::int64_t k) {
    return pending_steps_[static_cast<std::size_t>(e) * options_.n + Ring(e, k)];
  }
  std::size_t Ring(std::int64_t e, std::int64_t k) const {
    return static_cast<std::size_t>((start_[e] + k) % options_.n);
  }

  // A transition whose priority waits for V(next).
  struct Waiting {
    std::int64_t env;
    std::int64_t row;  // in ready_
    double partial;    // R - Q(s_t, a_t)
    double discount;
  };

  // Appends a transition built from pending step `i` of env `e` (the sum of
  // its rewards to the end of the pending steps) to ready_; returns its row.
  std::int64_t Emit(std::int64_t e, std::int64_t i, bool terminal,
                    std::span<const std::byte> next_observation, double& partial, double& discount);

  const NStepOptions options_;
  const std::int64_t num_envs_;
  const std::size_t obs_bytes_;
  const std::size_t action_bytes_;
  std::vector<std::byte> pending_obs_;      // [M, n, obs_bytes]
  std::vector<std::byte> pending_actions_;  // [M, n, action_bytes]
  std::vector<PendingStep> pending_steps_;  // [M, n]
  std::vector<std::int64_t> start_;         // per env: ring index of the oldest step
  std::vector<std::int64_t> count_;         // per env: pending steps, < n between calls
  std::int64_t dropped_ = 0;
  std::vector<Waiting> waiting_current_;
  std::vector<Waiting> waiting_final_;
  std::vector<std::int64_t> truncated_envs_;
  TransitionColumns ready_;
};

}  // namespace rlswarm::replay
