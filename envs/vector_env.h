#pragma once

// VectorEnv steps N environments of one kind as a batch and returns
// contiguous arrays ([N, ...] row-major) that LibTorch can wrap without
// copying (torch::from_blob).
//
// Auto-reset semantics (the part EnvPool users trip over, their issue #257)
// are Gymnasium 1.x's AutoresetMode. By default (kSameStep, the actors' mode)
// reset happens in the SAME Step call that ends an episode:
//   * observations() row i is always the observation the policy acts on next:
//     after a step that ended env i's episode it is the FIRST observation of
//     env i's new episode, not the last of the old one.
//   * final_observations() row i holds the LAST observation of the episode
//     that just ended; valid only where terminated(i) or truncated(i). Actors
//     bootstrap truncated episodes from it.
//   * rewards(), terminated(), truncated() describe the transition just taken
//     (the one that ended the episode, for a done env).
//   * episode_return(i) / episode_length(i) give the finished episode's
//     totals where done; otherwise the running totals of the current episode.
// With kNextStep (Gymnasium's default), the Step that ends env i's episode
// leaves its final observation in observations() row i (and in
// final_observations() row i); the NEXT Step ignores env i's action (it is
// not even validated), resets env i and reports reward 0, not terminated, not
// truncated, and the new episode's first observation.
//
// Seeding (deterministic whatever the number of envs or threads):
//   * kContinue: Reset(seed) seeds env i with DeriveSeed(seed, i); later
//     episodes of env i continue env i's own stream. Env i's episodes depend
//     only on (seed, i) and its actions, not on N.
//   * kSeedPerEpisode: the k-th episode started (k = 0, 1, ..., counted in
//     start order, slot order within a step) is seeded with DeriveSeed(seed, k)
//     and episode_id(i) tells which episode slot i runs; an episode then
//     depends only on (seed, k) and its actions. Evaluation uses this so that
//     its results do not depend on --num-envs.
//
// Gymnasium envs ("gymnasium:ID") run as one Gymnasium vector env in a
// worker process (gymnasium/env_worker.h) and present the same outputs. Their
// autoreset() is what the Python vector env does: kNextStep for its next_step
// mode (the default), kSameStep for same_step and for disabled (where this
// class resets finished envs itself, right after the step). kSeedPerEpisode
// always runs the vector env in disabled mode. num_threads does not
// apply (env.vectorization_mode does). Step and Reset throw
// gymnasium::EnvFailure when the env raises, returns a malformed observation
// or reward, or its worker dies; Restart() starts a new worker.
//
// With num_threads > 1, Step splits the envs into contiguous ranges stepped by
// a persistent worker pool; results are identical to one thread.
// Not thread-safe: one caller thread at a time.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "envs/env.h"
#include "envs/registry.h"
#include "envs/render.h"

namespace rlswarm::envs {

namespace gymnasium {
class EnvWorker;
}  // namespace gymnasium

enum class AutoResetSeeding { kContinue, kSeedPerEpisode };
enum class AutoResetMode { kSameStep, kNextStep };

struct VectorEnvOptions {
  std::int64_t num_envs = 1;
  int num_threads = 1;
  AutoResetSeeding seeding = AutoResetSeeding::kContinue;
  AutoResetMode autoreset = AutoResetMode::kSameStep;
  EnvOptions env;

  void Validate() const;  // throws InvalidArgument
};

class VectorEnv {
 public:
  // Throws NotFound for an unknown env, InvalidArgument for bad options.
  VectorEnv(std::string_view env_name, const VectorEnvOptions& options);
  ~VectorEnv();

  const EnvSpec& spec() const { return spec_; }
  std::int64_t num_envs() const { return num_envs_; }
  AutoResetSeeding seeding() const { return seeding_; }
  AutoResetMode autoreset() const { return autoreset_; }

  // Resets every env (seeding as described above) and fills observations().
  void Reset(std::uint64_t seed);

  // Steps every env with its action: discrete envs take num_envs int64s,
  // continuous ones num_envs * action-size float32s, row-major. Every action
  // is validated before any env moves, so a bad action throws
  // InvalidArgument and changes nothing. Throws FailedPrecondition before
  // the first Reset.
  void Step(std::span<const std::int64_t> actions);
  void Step(std::span<const float> actions);

  // Gymnasium envs: a new worker process in place of the current one (after
  // an EnvFailure), then Reset(seed). Built-in envs: Reset(seed).
  void Restart(std::uint64_t seed);
  // From any thread: a Gymnasium env's step in flight (or the next) gets a
  // short grace, then its worker is killed and Step throws Cancelled. No-op
  // for built-in envs.
  void RequestStop();
  // Gymnasium envs: the worker's process id (-1 for built-in envs).
  std::int64_t worker_pid() const;
  // What env i looks like now: a Gymnasium env's own render() (the env made
  // with kwargs render_mode "rgb_array"), else the observation drawn
  // (render.h). Throws InvalidArgument when neither can draw it.
  Image Render(std::int64_t i);
  // Whether Render can work: a Gymnasium env (its render mode is checked
  // when it renders), or a built-in env render.h draws.
  bool CanRenderFrames() const;

  // Batched outputs, valid until the next Step or Reset.
  const std::byte* observations() const { return observations_.data(); }
  const std::byte* final_observations() const { return final_observations_.data(); }
  const float* rewards() const { return rewards_.data(); }
  const std::uint8_t* terminated() const { return terminated_.data(); }
  const std::uint8_t* truncated() const { return truncated_.data(); }
  bool done(std::int64_t i) const { return terminated_[i] || truncated_[i]; }
  // kNextStep: row i is 1 where this step was env i's reset (its action was
  // ignored, no transition happened). All 0 with kSameStep.
  const std::uint8_t* reset_steps() const { return resetting_.data(); }
  double episode_return(std::int64_t i) const { return episode_return_[i]; }
  std::int64_t episode_length(std::int64_t i) const { return episode_length_[i]; }
  std::uint64_t episode_id(std::int64_t i) const { return episode_id_[i]; }

  std::size_t observation_bytes() const { return obs_bytes_; }
  std::span<const std::byte> observation(std::int64_t i) const {
    return {observations_.data() + i * obs_bytes_, obs_bytes_};
  }
  std::span<const std::byte> final_observation(std::int64_t i) const {
    return {final_observations_.data() + i * obs_bytes_, obs_bytes_};
  }

 private:
  class WorkerPool;

  void AllocateBuffers();
  void StartWorker();
  void ResetWorker(std::uint64_t seed);
  void StepWorker(const std::int64_t* discrete, const float* continuous);
  // kNextStep: env i's episode ended on the previous step, so this Step
  // resets it and ignores its action.
  bool IgnoresAction(std::int64_t i) const {
    return autoreset_ == AutoResetMode::kNextStep && done(i);
  }
  void ValidateDiscrete(std::span<const std::int64_t> actions) const;
  void ValidateContinuous(std::span<const float> actions) const;
  void StepRange(std::int64_t begin, std::int64_t end, const std::int64_t* discrete,
                 const float* continuous);
  void ResetEnv(std::int64_t i, std::optional<std::uint64_t> seed);
  void RunOnAll(const std::int64_t* discrete, const float* continuous);
  // Assigns episode ids to envs that reset in this step, in slot order, so the
  // numbering does not depend on the thread schedule.
  void StartEpisodes(std::int64_t begin, std::int64_t end);
  // kNextStep: resets the envs whose episode ended on the previous step
  // (marking them in resetting_) before the others are stepped.
  void ResetEndedEpisodes();

  EnvSpec spec_;
  std::int64_t num_envs_;
  AutoResetSeeding seeding_;
  AutoResetMode autoreset_;
  std::uint64_t seed_ = 0;
  std::uint64_t next_episode_id_ = 0;
  bool was_reset_ = false;
  std::size_t obs_bytes_;
  std::int64_t action_size_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::byte> observations_;
  std::vector<std::byte> final_observations_;
  std::vector<float> rewards_;
  std::vector<std::uint8_t> terminated_;
  std::vector<std::uint8_t> truncated_;
  std::vector<double> episode_return_;
  std::vector<std::int64_t> episode_length_;
  std::vector<std::uint64_t> episode_id_;
  std::vector<std::uint8_t> resetting_;  // kNextStep: env i resets in this Step
  // The actions of the Step in progress, read by the pool's workers.
  const std::int64_t* pending_discrete_ = nullptr;
  const float* pending_continuous_ = nullptr;
  std::unique_ptr<WorkerPool> pool_;
  // Gymnasium envs only: how to start the worker, and the running one.
  std::string gymnasium_id_;
  EnvOptions gymnasium_options_;
  std::string gymnasium_autoreset_;
  std::unique_ptr<gymnasium::EnvWorker> worker_;
};

}  // namespace rlswarm::envs
