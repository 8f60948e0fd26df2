#pragma once

// Actor: one actor process's loop (Ape-X, Horgan et al. 2018, section 3):
// M envs in a VectorEnv, one batched forward pass per step, actions chosen
// and explored by the algorithm's ActingPolicy (acting_policy.h:
// epsilon-greedy for DQN, Gaussian noise for TD3), n-step transitions with initial priorities
// (NStepAccumulator), sent in batches through a ReplayWriter, and weights refreshed from the
// learner's broadcast between steps.
//
// Per step:
//   actions, Q(s, a), V(s) = policy.Act(current observations, exploration)
//   -> V completes the priorities of last step's transitions; everything
//      ready goes to the writer (grouped by policy version)
//   -> envs step (auto-reset); n-step accumulation; one extra forward over
//      the final observations of time-limit-truncated episodes, if any
//   -> every refresh_steps steps or refresh_interval: take the newest
//      weights version if there is one (between forward passes, never
//      inside one)
//
// An env that fails (envs::EnvFailure: a Gymnasium env raises, returns a
// malformed observation or reward, or its worker process dies; a plugin's
// step or reset reports an error or a non-finite reward): the actor logs it
// (with a Gymnasium env's traceback), counts it (stats().env_errors), drops
// the unfinished n-step windows, and starts its envs again (a Gymnasium env
// in a new worker) with a fresh seed; a failure within kEnvFailureWindow steps of the
// previous restart, kMaxQuickEnvFailures times in a row, ends Run with the
// error (the launcher then restarts the actor process with backoff).
//
// Replay unreachable: the writer buffers boundedly, then drops and counts
// (replay_writer.h); the actor keeps acting. Stats (steps, episodes, returns,
// policy version and lag, writer counters) are readable from any thread.
//
// Thread safety: Run() on one thread; Stop() and stats() from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/exploration.h"
#include "common/thread_annotations.h"
#include "envs/vector_env.h"
#include "replay/service/n_step.h"
#include "replay/service/replay_writer.h"
#include "rpc/broadcast.h"

namespace rlswarm::models {
struct ModelSpec;
}  // namespace rlswarm::models

namespace rlswarm::actors {

class ActingPolicy;
struct ActingNetworks;
class WeightsFollower;

struct ActorOptions {
  std::int64_t actor_id = 0;
  std::int64_t num_actors = 1;
  std::string env_name = "CartPole-v1";
  envs::VectorEnvOptions env;
  replay::NStepOptions n_step;
  ExplorationOptions exploration;
  std::uint64_t seed = 0;      // envs and exploration of actor i derive from (seed, i)
  std::int64_t max_steps = 0;  // env steps of this actor (M per loop); 0 = until Stop()
  // Env steps this actor took in the runs before a resume: the exploration
  // schedule continues from there instead of starting again at its first
  // epsilon, and the envs start a stream of their own (not the first run's
  // episodes again). 0 for a fresh run.
  std::int64_t start_steps = 0;
  // The learner's weights publishers: one for publish_mode full, one per
  // learner rank for parts (see WeightsFollower). None = act with the
  // initial parameters (seeded) forever.
  std::vector<rpc::SubscriberOptions> weights;
  std::int64_t refresh_steps = 100;  // loop iterations between weight checks
  std::chrono::milliseconds refresh_interval{200};
  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

// One finished episode, as reported to the metrics stream.
struct EpisodeStats {
  std::int64_t actor_id = 0;
  double episode_return = 0;
  std::int64_t length = 0;
  double epsilon = 0;
  std::int64_t policy_version = 0;
};

struct ActorStats {
  std::int64_t env_steps = 0;
  std::int64_t episodes = 0;
  double mean_recent_return = 0;  // last 100 episodes
  std::int64_t policy_version = 0;
  std::int64_t newest_version_seen = 0;  // version lag = newest - policy
  std::int64_t weight_updates = 0;
  std::int64_t transitions = 0;  // handed to the writer
  std::int64_t env_errors = 0;   // env failures survived by restarting the envs
  double steps_per_sec = 0;
  replay::ReplayWriterStats writer;
};

class Actor {
 public:
  // Throws InvalidArgument for bad options or networks that do not fit the
  // env, NotFound for an unknown env.
  Actor(ActorOptions options, const ActingNetworks& networks, replay::ReplayWriterOptions writer);
  // An Ape-X DQN actor: epsilon-greedy on a Q-network of `model`.
  Actor(ActorOptions options, const models::ModelSpec& model, std::uint64_t model_seed,
        replay::ReplayWriterOptions writer);
  ~Actor();
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  // Runs until Stop() or max_steps; then flushes the writer (up to 5 s) and
  // closes it: what is still unacknowledged is dropped and counted in
  // stats().writer. Runs once.
  // `on_episode` (optional) runs on this thread for every finished episode.
  void Run(const std::function<void(const EpisodeStats&)>& on_episode = {});
  // From any thread. An env step in flight gets a short grace (a hung
  // Gymnasium env's worker is then killed); a send waiting for room in the
  // writer's buffer stops waiting (its oldest batch is dropped instead).
  void Stop();
  ActorStats stats() const;
  // The current exploration value: epsilon (dqn) or sigma (td3).
  double epsilon() const { return epsilon_; }

 private:
  // Steps the envs with `actions`; on an env failure restarts them (see the
  // class comment) and returns false: that step produced no transitions.
  bool StepEnvs(const std::vector<std::byte>& actions, std::uint64_t& env_seed);
  void RefreshWeights();
  // V(final observation) of the envs whose episodes the time limit cut
  // this step, for the n-step bootstrap; the vectors are reused buffers.
  void BootstrapTruncated(std::vector<std::byte>& final_rows, std::vector<float>& final_values);
  // After the loop: prices, sends and flushes (up to 5 s) what the actor
  // still holds, then closes the writer. `observations` and `values` are
  // the loop's buffers, reused.
  void SendRemaining(std::vector<std::byte>& observations, std::vector<float>& values);
  // Hands the ready transitions to the writer once a batch's worth
  // (max_batch_items) has gathered, the oldest has waited flush_interval,
  // or `force`.
  void SendReady(bool force);

  const ActorOptions options_;
  envs::VectorEnv env_;
  std::unique_ptr<ActingPolicy> policy_;
  replay::NStepAccumulator n_step_;
  replay::ReplayWriter writer_;
  std::unique_ptr<WeightsFollower> weights_;
  std::atomic<bool> stop_{false};
  double epsilon_ = 0;
  std::int64_t policy_version_ = 0;
  const std::int64_t batch_items_;               // the writer's max_batch_items
  const std::chrono::milliseconds batch_delay_;  // and flush_interval
  std::chrono::steady_clock::time_point ready_since_;
  std::int64_t steps_since_env_restart_ = 0;
  int quick_env_failures_ = 0;

  mutable Mutex mu_;
  ActorStats stats_ RLSWARM_GUARDED_BY(mu_);
};

}  // namespace rlswarm::actors
