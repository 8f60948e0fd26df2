#include "envs/vector_env.h"

#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "envs/gymnasium/env_worker.h"

namespace rlswarm::envs {

// A fork-join pool: Run() hands chunk k to worker k (the caller runs chunk 0)
// and returns when every chunk is done, rethrowing the first exception.
// Workers sleep on a condition variable between calls; they join in the
// destructor.
class VectorEnv::WorkerPool {
 public:
  WorkerPool(int num_chunks, std::function<void(int)> work)
      : work_(std::move(work)), errors_(num_chunks) {
    for (int k = 1; k < num_chunks; ++k) threads_.emplace_back([this, k] { Loop(k); });
  }

  ~WorkerPool() {
    {
      MutexLock lock(mutex_);
      stop_ = true;
    }
    start_.NotifyAll();
    for (auto& t : threads_) t.join();
  }

  void Run() RLSWARM_EXCLUDES(mutex_) {
    {
      MutexLock lock(mutex_);
      ++generation_;
      pending_ = static_cast<int>(threads_.size());
    }
    start_.NotifyAll();
    RunChunk(0);
    MutexLock lock(mutex_);
    finished_.Wait(lock, [this]() RLSWARM_REQUIRES(mutex_) { return pending_ == 0; });
    for (auto& e : errors_) {
      if (e) std::rethrow_exception(std::exchange(e, nullptr));
    }
  }

 private:
  void RunChunk(int k) {
    try {
      work_(k);
    } catch (...) {
      errors_[k] = std::current_exception();
    }
  }

  void Loop(int k) RLSWARM_EXCLUDES(mutex_) {
    std::uint64_t seen = 0;
    while (true) {
      {
        MutexLock lock(mutex_);
        start_.Wait(
            lock, [this, seen]() RLSWARM_REQUIRES(mutex_) { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      RunChunk(k);
      MutexLock lock(mutex_);
      if (--pending_ == 0) finished_.NotifyOne();
    }
  }

  std::function<void(int)> work_;
  // Slot k is written only by chunk k, and read by Run() once every chunk
  // has reported done under mutex_ (which orders the write before the read).
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
  Mutex mutex_;
  CondVar start_;
  CondVar finished_;
  std::uint64_t generation_ RLSWARM_GUARDED_BY(mutex_) = 0;
  int pending_ RLSWARM_GUARDED_BY(mutex_) = 0;
  bool stop_ RLSWARM_GUARDED_BY(mutex_) = false;
};

void VectorEnvOptions::Validate() const {
  if (num_envs < 1) throw InvalidArgument("num_envs must be >= 1, got " + std::to_string(num_envs));
  if (num_threads < 1) {
    throw InvalidArgument("num_threads must be >= 1, got " + std::to_string(num_threads));
  }
  env.Validate();
}

VectorEnv::VectorEnv(std::string_view env_name, const VectorEnvOptions& options)
    : num_envs_(options.num_envs), seeding_(options.seeding), autoreset_(options.autoreset) {
  options.Validate();
  if (IsGymnasiumEnv(env_name)) {
    gymnasium_id_ = std::string(env_name.substr(kGymnasiumPrefix.size()));
    gymnasium_options_ = options.env;
    const bool per_episode = seeding_ == AutoResetSeeding::kSeedPerEpisode;
    // Seeding every episode needs rlswarm to reset each env itself.
    gymnasium_autoreset_ = per_episode ? "disabled" : options.env.autoreset_mode.value_or("");
    StartWorker();
    AllocateBuffers();
    return;
  }
  envs_.reserve(num_envs_);
  for (std::int64_t i = 0; i < num_envs_; ++i) envs_.push_back(MakeEnv(env_name, options.env));
  spec_ = envs_[0]->spec();
  AllocateBuffers();
  const int chunks = static_cast<int>(std::min<std::int64_t>(options.num_threads, num_envs_));
  if (chunks > 1) {
    pool_ = std::make_unique<WorkerPool>(chunks, [this, chunks](int k) {
      const std::int64_t begin = num_envs_ * k / chunks;
      const std::int64_t end = num_envs_ * (k + 1) / chunks;
      StepRange(begin, end, pending_discrete_, pending_continuous_);
    });
  }
}

void VectorEnv::AllocateBuffers() {
  obs_bytes_ = spec_.observation.NumBytes();
  action_size_ = spec_.action.kind == ActionKind::kDiscrete ? 1 : spec_.action.array.NumElements();
  observations_.resize(num_envs_ * obs_bytes_);
  final_observations_.resize(num_envs_ * obs_bytes_);
  rewards_.resize(num_envs_);
  terminated_.resize(num_envs_);
  truncated_.resize(num_envs_);
  episode_return_.resize(num_envs_);
  episode_length_.resize(num_envs_);
  episode_id_.resize(num_envs_);
  resetting_.resize(num_envs_);
}

VectorEnv::~VectorEnv() = default;

void VectorEnv::ResetEnv(std::int64_t i, std::optional<std::uint64_t> seed) {
  envs_[i]->Reset(seed, {observations_.data() + i * obs_bytes_, obs_bytes_});
}

void VectorEnv::Reset(std::uint64_t seed) {
  seed_ = seed;
  next_episode_id_ = 0;
  if (worker_) {
    ResetWorker(seed);
    was_reset_ = true;
    return;
  }
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (seeding_ == AutoResetSeeding::kContinue) {
      ResetEnv(i, DeriveSeed(seed, i));
    } else {
      episode_id_[i] = next_episode_id_++;
      ResetEnv(i, DeriveSeed(seed, episode_id_[i]));
    }
    rewards_[i] = 0.0f;
    terminated_[i] = truncated_[i] = 0;
    episode_return_[i] = 0.0;
    episode_length_[i] = 0;
  }
  was_reset_ = true;
}

void VectorEnv::ValidateDiscrete(std::span<const std::int64_t> actions) const {
  if (spec_.action.kind != ActionKind::kDiscrete) {
    throw InvalidArgument(spec_.name + ": has continuous actions, got discrete actions");
  }
  if (static_cast<std::int64_t>(actions.size()) != num_envs_) {
    throw InvalidArgument(spec_.name + ": got " + std::to_string(actions.size()) + " actions for " +
                          std::to_string(num_envs_) + " envs");
  }
  const std::int64_t n = spec_.action.num_actions;
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (IgnoresAction(i)) continue;
    if (actions[i] < 0 || actions[i] >= n) {
      throw InvalidArgument(spec_.name + ": action " + std::to_string(actions[i]) + " of env " +
                            std::to_string(i) + " out of range [0, " + std::to_string(n) + ")");
    }
  }
}

void VectorEnv::ValidateContinuous(std::span<const float> actions) const {
  if (spec_.action.kind != ActionKind::kContinuous) {
    throw InvalidArgument(spec_.name + ": has discrete actions, got continuous actions");
  }
  if (static_cast<std::int64_t>(actions.size()) != num_envs_ * action_size_) {
    throw InvalidArgument(spec_.name + ": got " + std::to_string(actions.size()) +
                          " action values for " + std::to_string(num_envs_) + " envs x " +
                          std::to_string(action_size_));
  }
  const ArraySpec& a = spec_.action.array;
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    if (IgnoresAction(i)) continue;
    for (std::int64_t j = 0; j < action_size_; ++j) {
      const float v = actions[i * action_size_ + j];
      if (!(v >= a.Low(j) && v <= a.High(j))) {
        throw InvalidArgument(spec_.name + ": action element " + std::to_string(j) + " of env " +
                              std::to_string(i) + " = " + std::to_string(v) + " outside [" +
                              std::to_string(a.Low(j)) + ", " + std::to_string(a.High(j)) + "]");
      }
    }
  }
}

void VectorEnv::StepRange(std::int64_t begin, std::int64_t end, const std::int64_t* discrete,
                          const float* continuous) {
  for (std::int64_t i = begin; i < end; ++i) {
    std::byte* obs = observations_.data() + i * obs_bytes_;
    if (resetting_[i]) {  // kNextStep: this step is the reset
      rewards_[i] = 0.0f;
      terminated_[i] = truncated_[i] = 0;
      episode_return_[i] = 0.0;
      episode_length_[i] = 0;
      continue;
    }
    if (done(i)) {  // a new episode started on the previous step
      episode_return_[i] = 0.0;
      episode_length_[i] = 0;
    }
    const StepResult r = discrete ? envs_[i]->Step(discrete[i], {obs, obs_bytes_})
                                  : envs_[i]->Step({continuous + i * action_size_,
                                                    static_cast<std::size_t>(action_size_)},
                                                   {obs, obs_bytes_});
    rewards_[i] = r.reward;
    terminated_[i] = r.terminated;
    truncated_[i] = r.truncated;
    episode_return_[i] += r.reward;
    episode_length_[i] += 1;
    if (r.terminated || r.truncated) {
      std::memcpy(final_observations_.data() + i * obs_bytes_, obs, obs_bytes_);
      if (autoreset_ == AutoResetMode::kSameStep && seeding_ == AutoResetSeeding::kContinue) {
        ResetEnv(i, std::nullopt);
      }
    }
  }
}

void VectorEnv::StartEpisodes(std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) {
    if (!done(i)) continue;
    episode_id_[i] = next_episode_id_++;
    ResetEnv(i, DeriveSeed(seed_, episode_id_[i]));
  }
}

void VectorEnv::ResetEndedEpisodes() {
  for (std::int64_t i = 0; i < num_envs_; ++i) {
    resetting_[i] = done(i);
    if (!resetting_[i]) continue;
    if (seeding_ == AutoResetSeeding::kContinue) {
      ResetEnv(i, std::nullopt);
    } else {
      episode_id_[i] = next_episode_id_++;
      ResetEnv(i, DeriveSeed(seed_, episode_id_[i]));
    }
  }
}

void VectorEnv::RunOnAll(const std::int64_t* discrete, const float* continuous) {
  if (!was_reset_) throw FailedPrecondition(spec_.name + ": VectorEnv stepped before Reset");
  if (worker_) {
    StepWorker(discrete, continuous);
    return;
  }
  if (autoreset_ == AutoResetMode::kNextStep) ResetEndedEpisodes();
  if (pool_) {
    pending_discrete_ = discrete;
    pending_continuous_ = continuous;
    pool_->Run();
  } else {
    StepRange(0, num_envs_, discrete, continuous);
  }
  if (autoreset_ == AutoResetMode::kSameStep && seeding_ == AutoResetSeeding::kSeedPerEpisode) {
    StartEpisodes(0, num_envs_);
  }
}

void VectorEnv::Step(std::span<const std::int64_t> actions) {
  ValidateDiscrete(actions);
  RunOnAll(actions.data(), nullptr);
}

void VectorEnv::Step(std::span<const float> actions) {
  ValidateContinuous(actions);
  RunOnAll(nullptr, actions.data());
}

}  // namespace rlswarm::envs
