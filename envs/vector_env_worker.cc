// VectorEnv's Gymnasium path: the same outputs as the built-in path, from a
// Python vector env in a worker process (gymnasium/env_worker.h).

#include <cstring>

#include "common/errors.h"
#include "envs/gymnasium/env_worker.h"
#include "envs/vector_env.h"

namespace rlswarm::envs {

void VectorEnv::StartWorker() {
  gymnasium::EnvWorkerOptions o;
  o.env_id = gymnasium_id_;
  o.env = gymnasium_options_;
  o.num_envs = num_envs_;
  o.autoreset_mode = gymnasium_autoreset_;
  worker_.reset();  // the old worker goes first: it may hold the env's resources
  worker_ = std::make_unique<gymnasium::EnvWorker>(o);
  spec_ = worker_->spec();
  autoreset_ = worker_->autoreset_mode() == "next_step" ? AutoResetMode::kNextStep
                                                        : AutoResetMode::kSameStep;
}

void VectorEnv::Restart(std::uint64_t seed) {
  if (worker_) {
    was_reset_ = false;
    StartWorker();
  }
  Reset(seed);
}

void VectorEnv::RequestStop() {
  if (worker_) worker_->RequestStop();
}

std::int64_t VectorEnv::worker_pid() const { return worker_ ? worker_->pid() : -1; }

Image VectorEnv::Render(std::int64_t i) {
  if (i < 0 || i >= num_envs_) {
    throw InvalidArgument("render: no env " + std::to_string(i) + " of " +
                          std::to_string(num_envs_));
  }
  if (worker_) return worker_->Render(i);
  return RenderObservation(spec_, observation(i));
}

bool VectorEnv::CanRenderFrames() const { return worker_ != nullptr || CanRender(spec_); }

void VectorEnv::ResetWorker(std::uint64_t seed) {
  auto* seeds = reinterpret_cast<std::uint64_t*>(worker_->array("seeds"));
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (seeding_ == AutoResetSeeding::kContinue) {
      seeds[i] = DeriveSeed(seed, i);
    } else {
      episode_id_[i] = next_episode_id_++;
      seeds[i] = DeriveSeed(seed, episode_id_[i]);
    }
  }
  worker_->Reset(/*seeded=*/true);
  std::memcpy(observations_.data(), worker_->array("observations"), observations_.size());
  std::fill(rewards_.begin(), rewards_.end(), 0.0f);
  std::fill(terminated_.begin(), terminated_.end(), 0);
  std::fill(truncated_.begin(), truncated_.end(), 0);
  std::fill(episode_return_.begin(), episode_return_.end(), 0.0);
  std::fill(episode_length_.begin(), episode_length_.end(), 0);
}

void VectorEnv::StepWorker(const std::int64_t* discrete, const float* continuous) {
  // Actions a next-step reset ignores were not validated: send a valid one.
  std::byte* actions = worker_->array("actions");
  if (discrete) {
    auto* out = reinterpret_cast<std::int64_t*>(actions);
    for (std::int64_t i = 0; i < num_envs_; ++i) out[i] = IgnoresAction(i) ? 0 : discrete[i];
  } else {
    auto* out = reinterpret_cast<float*>(actions);
    const ArraySpec& a = spec_.action.array;
    for (std::int64_t i = 0; i < num_envs_; ++i) {
      for (std::int64_t j = 0; j < action_size_; ++j) {
        out[i * action_size_ + j] =
            IgnoresAction(i) ? static_cast<float>(a.Low(j)) : continuous[i * action_size_ + j];
      }
    }
  }
  for (std::int64_t i = 0; i < num_envs_; ++i) resetting_[i] = IgnoresAction(i);
  std::vector<std::uint8_t> ended_before(static_cast<std::size_t>(num_envs_));
  for (std::int64_t i = 0; i < num_envs_; ++i) ended_before[i] = done(i);

  worker_->Step();

  const auto* rewards = reinterpret_cast<const float*>(worker_->array("rewards"));
  const auto* terminated = reinterpret_cast<const std::uint8_t*>(worker_->array("terminated"));
  const auto* truncated = reinterpret_cast<const std::uint8_t*>(worker_->array("truncated"));
  const std::byte* finals = worker_->array("final_observations");
  std::memcpy(observations_.data(), worker_->array("observations"), observations_.size());
  bool any_done = false;
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (resetting_[i]) {  // kNextStep: this step was the reset
      rewards_[i] = 0.0f;
      terminated_[i] = truncated_[i] = 0;
      episode_return_[i] = 0.0;
      episode_length_[i] = 0;
      continue;
    }
    if (ended_before[i]) {  // a new episode started on the previous step
      episode_return_[i] = 0.0;
      episode_length_[i] = 0;
    }
    rewards_[i] = rewards[i];
    terminated_[i] = terminated[i] != 0;
    truncated_[i] = truncated[i] != 0;
    episode_return_[i] += rewards[i];
    episode_length_[i] += 1;
    if (done(i)) {
      any_done = true;
      std::memcpy(final_observations_.data() + i * obs_bytes_, finals + i * obs_bytes_, obs_bytes_);
    }
  }
  if (!any_done || worker_->autoreset_mode() != "disabled") return;
  // disabled: start the finished envs' next episodes now (same-step outputs).
  auto* mask = reinterpret_cast<std::uint8_t*>(worker_->array("reset_mask"));
  auto* seeds = reinterpret_cast<std::uint64_t*>(worker_->array("seeds"));
  const bool seeded = seeding_ == AutoResetSeeding::kSeedPerEpisode;
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    mask[i] = done(i);
    if (mask[i] && seeded) {
      episode_id_[i] = next_episode_id_++;
      seeds[i] = DeriveSeed(seed_, episode_id_[i]);
    }
  }
  worker_->ResetMasked(seeded);
  const std::byte* obs = worker_->array("observations");
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (!mask[i]) continue;
    std::memcpy(observations_.data() + i * obs_bytes_, obs + i * obs_bytes_, obs_bytes_);
  }
}

}  // namespace rlswarm::envs
