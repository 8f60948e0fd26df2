#include "replay/service/n_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.h"

namespace rlswarm::replay {

void NStepOptions::Validate() const {
  if (n < 1) throw InvalidArgument("n-step: n must be >= 1, got " + std::to_string(n));
  if (!(gamma >= 0 && gamma <= 1)) {
    throw InvalidArgument("n-step: gamma must be in [0, 1], got " + std::to_string(gamma));
  }
  if (!(reward_clip >= 0)) {
    throw InvalidArgument("n-step: reward_clip must be >= 0 (0: off), got " +
                          std::to_string(reward_clip));
  }
}

void TransitionColumns::Clear() {
  observation.clear();
  action.clear();
  reward.clear();
  discount.clear();
  next_observation.clear();
  priority.clear();
  policy_version.clear();
}

NStepAccumulator::NStepAccumulator(NStepOptions options, std::int64_t num_envs,
                                   std::size_t obs_bytes, std::size_t action_bytes)
    : options_(options), num_envs_(num_envs), obs_bytes_(obs_bytes), action_bytes_(action_bytes) {
  options_.Validate();
  if (num_envs < 1 || obs_bytes == 0 || action_bytes == 0) {
    throw InvalidArgument("n-step: needs num_envs >= 1 and non-empty observations and actions");
  }
  const auto slots = static_cast<std::size_t>(num_envs) * static_cast<std::size_t>(options_.n);
  pending_obs_.resize(slots * obs_bytes);
  pending_actions_.resize(slots * action_bytes);
  pending_steps_.resize(slots);
  start_.assign(static_cast<std::size_t>(num_envs), 0);
  count_.assign(static_cast<std::size_t>(num_envs), 0);
}

std::int64_t NStepAccumulator::Emit(std::int64_t e, std::int64_t i, bool terminal,
                                    std::span<const std::byte> next_observation, double& partial,
                                    double& discount) {
  double reward = 0;
  double scale = 1;
  for (std::int64_t k = i; k < count_[e]; ++k) {
    reward += scale * StepSlot(e, k).reward;
    scale *= options_.gamma;
  }
  discount = terminal ? 0.0 : scale;  // gamma^m
  const PendingStep& first = StepSlot(e, i);
  partial = reward - first.q_taken;
  const std::byte* obs = ObservationSlot(e, i);
  const std::byte* action = ActionSlot(e, i);
  ready_.observation.insert(ready_.observation.end(), obs, obs + obs_bytes_);
  ready_.action.insert(ready_.action.end(), action, action + action_bytes_);
  ready_.reward.push_back(static_cast<float>(reward));
  ready_.discount.push_back(static_cast<float>(discount));
  ready_.next_observation.insert(ready_.next_observation.end(), next_observation.begin(),
                                 next_observation.end());
  ready_.priority.push_back(terminal ? std::abs(partial) : 0.0);  // else set on completion
  ready_.policy_version.push_back(first.policy_version);
  return ready_.size() - 1;
}

TransitionColumns NStepAccumulator::TakeReady() {
  if (waiting() > 0) {
    throw FailedPrecondition("n-step: " + std::to_string(waiting()) +
                             " ready transitions still wait for a value");
  }
  TransitionColumns taken = std::move(ready_);
  ready_ = TransitionColumns{};
  const auto rows = static_cast<std::size_t>(taken.size());
  ready_.observation.reserve(taken.observation.size());
  ready_.action.reserve(taken.action.size());
  ready_.reward.reserve(rows);
  ready_.discount.reserve(rows);
  ready_.next_observation.reserve(taken.next_observation.size());
  ready_.priority.reserve(rows);
  ready_.policy_version.reserve(rows);
  return taken;
}

void NStepAccumulator::SetCurrentValues(std::span<const float> values) {
  if (static_cast<std::int64_t>(values.size()) != num_envs_) {
    throw InvalidArgument("n-step: " + std::to_string(values.size()) + " values for " +
                          std::to_string(num_envs_) + " envs");
  }
  for (const Waiting& w : waiting_current_) {
    ready_.priority[static_cast<std::size_t>(w.row)] =
        std::abs(w.partial + w.discount * values[static_cast<std::size_t>(w.env)]);
  }
  waiting_current_.clear();
}

void NStepAccumulator::SetFinalValues(std::span<const float> values) {
  if (values.size() != truncated_envs_.size()) {
    throw InvalidArgument("n-step: " + std::to_string(values.size()) + " final values for " +
                          std::to_string(truncated_envs_.size()) + " truncated envs");
  }
  for (const Waiting& w : waiting_final_) {
    // waiting_final_ rows are grouped by env in truncated_envs_ order.
    std::size_t index = 0;
    while (truncated_envs_[index] != w.env) ++index;
    ready_.priority[static_cast<std::size_t>(w.row)] =
        std::abs(w.partial + w.discount * values[index]);
  }
  waiting_final_.clear();
}

void NStepAccumulator::Observe(const EnvStep& step) {
  if (!waiting_current_.empty() || !waiting_final_.empty()) {
    throw FailedPrecondition(
        "n-step: transitions of the previous step still wait for SetCurrentValues or "
        "SetFinalValues");
  }
  const auto m = static_cast<std::size_t>(num_envs_);
  if (step.observations.size() != m * obs_bytes_ || step.actions.size() != m * action_bytes_ ||
      step.q_taken.size() != m || step.rewards.size() != m || step.terminated.size() != m ||
      step.truncated.size() != m || step.next_observations.size() != m * obs_bytes_ ||
      step.final_observations.size() != m * obs_bytes_ ||
      (!step.skipped.empty() && step.skipped.size() != m)) {
    throw InvalidArgument("n-step: every column of a step must hold " + std::to_string(m) +
                          " rows");
  }
  truncated_envs_.clear();
  for (std::size_t e = 0; e < m; ++e) {
    const auto env = static_cast<std::int64_t>(e);
    if (!step.skipped.empty() && step.skipped[e]) {
      // The previous step ended the episode and emitted all of it.
      count_[env] = 0;
      continue;
    }
    // Append step t to the env's ring.
    const std::int64_t k = count_[env];
    std::memcpy(ObservationSlot(env, k), step.observations.data() + e * obs_bytes_, obs_bytes_);
    std::memcpy(ActionSlot(env, k), step.actions.data() + e * action_bytes_, action_bytes_);
    const float clip = static_cast<float>(options_.reward_clip);
    const float reward = clip > 0 ? std::clamp(step.rewards[e], -clip, clip) : step.rewards[e];
    StepSlot(env, k) = {reward, step.q_taken[e], step.policy_version};
    ++count_[env];
    double partial = 0;
    double discount = 0;
    if (step.terminated[e]) {
      const auto final_obs = step.final_observations.subspan(e * obs_bytes_, obs_bytes_);
      for (std::int64_t i = 0; i < count_[env]; ++i)
        Emit(env, i, true, final_obs, partial, discount);
      count_[env] = 0;
    } else if (step.truncated[e]) {
      const auto final_obs = step.final_observations.subspan(e * obs_bytes_, obs_bytes_);
      for (std::int64_t i = 0; i < count_[env]; ++i) {
        const std::int64_t row = Emit(env, i, false, final_obs, partial, discount);
        waiting_final_.push_back({env, row, partial, discount});
      }
      count_[env] = 0;
      truncated_envs_.push_back(env);
    } else if (count_[env] == options_.n) {
      const auto next = step.next_observations.subspan(e * obs_bytes_, obs_bytes_);
      const std::int64_t row = Emit(env, 0, false, next, partial, discount);
      waiting_current_.push_back({env, row, partial, discount});
      start_[env] = (start_[env] + 1) % options_.n;  // drop the oldest
      --count_[env];
    }
  }
}

void NStepAccumulator::DropPending() {
  if (!waiting_current_.empty() || !waiting_final_.empty()) {
    throw FailedPrecondition("n-step: DropPending while transitions wait for their values");
  }
  for (std::int64_t e = 0; e < num_envs_; ++e) {
    dropped_ += count_[e];
    count_[e] = 0;
  }
}

}  // namespace rlswarm::replay
