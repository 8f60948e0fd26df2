#include "actors/actor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>

#include "actors/acting_policy.h"
#include "actors/weights_follower.h"
#include "common/errors.h"
#include "common/random.h"
#include "envs/env_failure.h"
#include "models/model_spec.h"
#include "replay/service/transition.h"

namespace rlswarm::actors {

using Clock = std::chrono::steady_clock;

// Env failures closer together than this many loop iterations count as
// "in a row"; that many in a row end the actor.
constexpr std::int64_t kEnvFailureWindow = 1000;
constexpr int kMaxQuickEnvFailures = 3;

void ActorOptions::Validate() const {
  if (num_actors < 1 || actor_id < 0 || actor_id >= num_actors) {
    throw InvalidArgument("actor: actor_id " + std::to_string(actor_id) + " is not in [0, " +
                          std::to_string(num_actors) + ")");
  }
  env.Validate();
  n_step.Validate();
  exploration.Validate();
  if (max_steps < 0 || start_steps < 0 || refresh_steps < 1 || refresh_interval.count() < 0) {
    throw InvalidArgument(
        "actor: max_steps >= 0, start_steps >= 0, refresh_steps >= 1, refresh_interval >= 0");
  }
}

namespace {

ActorOptions Validated(ActorOptions options) {
  options.Validate();
  return options;
}

// An actor's policy needs the critics of a continuous-action algorithm for
// its initial priorities.
std::unique_ptr<ActingPolicy> MakeActorPolicy(const ActingNetworks& networks,
                                              const envs::EnvSpec& env) {
  if (env.action.kind == envs::ActionKind::kContinuous && !networks.critic) {
    throw InvalidArgument("actor: " + env.name +
                          " has continuous actions (DQN needs discrete; learner.algorithm: td3)");
  }
  return MakeActingPolicy(networks, env);
}

}  // namespace

Actor::Actor(ActorOptions options, const ActingNetworks& networks,
             replay::ReplayWriterOptions writer)
    : options_(Validated(std::move(options))),
      env_(options_.env_name, options_.env),
      policy_(MakeActorPolicy(networks, env_.spec())),
      n_step_(options_.n_step, options_.env.num_envs, env_.observation_bytes(),
              policy_->action_bytes()),
      writer_(writer),
      batch_items_(writer.max_batch_items),
      batch_delay_(writer.flush_interval) {
  if (!options_.weights.empty()) weights_ = std::make_unique<WeightsFollower>(options_.weights);
}

Actor::Actor(ActorOptions options, const models::ModelSpec& model, std::uint64_t model_seed,
             replay::ReplayWriterOptions writer)
    : Actor(std::move(options), ActingNetworks{model, std::nullopt, model_seed}, writer) {}

Actor::~Actor() = default;

void Actor::Stop() {
  stop_ = true;
  // A send waiting for room (replay's rate limiter holding inserts) would
  // keep Run() from seeing the stop for up to the writer's max_block.
  writer_.StopWaiting();
  env_.RequestStop();
}

bool Actor::StepEnvs(const std::vector<std::byte>& actions, std::uint64_t& env_seed) {
  try {
    if (env_.spec().action.kind == envs::ActionKind::kDiscrete) {
      env_.Step(std::span(reinterpret_cast<const std::int64_t*>(actions.data()),
                          actions.size() / sizeof(std::int64_t)));
    } else {
      env_.Step(std::span(reinterpret_cast<const float*>(actions.data()),
                          actions.size() / sizeof(float)));
    }
    ++steps_since_env_restart_;
    return true;
  } catch (const envs::EnvFailure& e) {
    quick_env_failures_ =
        steps_since_env_restart_ < kEnvFailureWindow ? quick_env_failures_ + 1 : 1;
    {
      MutexLock lock(mu_);
      ++stats_.env_errors;
    }
    spdlog::error("actor {}: env failure ({} in a row): {}", options_.actor_id, quick_env_failures_,
                  e.what());
    if (quick_env_failures_ >= kMaxQuickEnvFailures) throw;
  }
  n_step_.DropPending();
  env_seed = DeriveSeed(env_seed, 0xe2e0ULL + static_cast<std::uint64_t>(quick_env_failures_));
  env_.Restart(env_seed);
  steps_since_env_restart_ = 0;
  spdlog::warn("actor {}: envs restarted (a Gymnasium env in a new worker)", options_.actor_id);
  return false;
}

void Actor::RefreshWeights() {
  if (!weights_) return;
  std::optional<rpc::VersionedBlob> blob =
      weights_->Poll(static_cast<std::uint64_t>(policy_version_));
  {
    MutexLock lock(mu_);
    stats_.newest_version_seen = static_cast<std::int64_t>(weights_->newest_announced());
  }
  if (!blob) return;
  try {
    policy_->LoadWeights(blob->payloads);
  } catch (const Error& e) {
    spdlog::error("actor {}: ignoring weights version {}: {}", options_.actor_id, blob->version,
                  e.what());
    return;
  }
  policy_version_ = static_cast<std::int64_t>(blob->version);
  MutexLock lock(mu_);
  stats_.policy_version = policy_version_;
  ++stats_.weight_updates;
}

void Actor::SendReady(bool force) {
  const std::int64_t n = n_step_.ready().size();
  if (n == 0) return;
  const auto now = Clock::now();
  if (ready_since_ == Clock::time_point{}) ready_since_ = now;
  if (!force && n < batch_items_ && now - ready_since_ < batch_delay_) return;
  ready_since_ = {};
  // The columns go to the writer as they are: the batches' frames point into
  // them, and the shared owner keeps them alive until every batch is
  // acknowledged or dropped.
  auto owner = std::make_shared<const replay::TransitionColumns>(n_step_.TakeReady());
  const replay::TransitionColumns& t = *owner;
  const std::size_t obs_bytes = env_.observation_bytes();
  const std::size_t action_bytes = policy_->action_bytes();
  const auto& obs_spec = env_.spec().observation;
  const std::vector<std::int64_t> action_row_shape = policy_->action_shape();
  std::int64_t begin = 0;
  while (begin < n) {
    // One batch per run of rows from the same policy version.
    std::int64_t end = begin + 1;
    while (end < n && t.policy_version[end] == t.policy_version[begin]) ++end;
    const std::int64_t rows = end - begin;
    std::vector<std::int64_t> obs_shape = {rows};
    obs_shape.insert(obs_shape.end(), obs_spec.shape.begin(), obs_spec.shape.end());
    const std::vector<std::int64_t> scalar_shape = {rows};
    std::vector<std::int64_t> action_shape = {rows};
    action_shape.insert(action_shape.end(), action_row_shape.begin(), action_row_shape.end());
    const auto b = static_cast<std::size_t>(begin);
    const auto r = static_cast<std::size_t>(rows);
    namespace field = replay::transition;
    replay::InsertBatch batch;
    batch.fields = {{field::kObservation, obs_spec.dtype, obs_shape,
                     std::span(t.observation).subspan(b * obs_bytes, r * obs_bytes)},
                    {field::kAction, policy_->action_dtype(), action_shape,
                     std::span(t.action).subspan(b * action_bytes, r * action_bytes)},
                    {field::kReward, DType::kFloat32, scalar_shape,
                     std::as_bytes(std::span(t.reward).subspan(b, r))},
                    {field::kDiscount, DType::kFloat32, scalar_shape,
                     std::as_bytes(std::span(t.discount).subspan(b, r))},
                    {field::kNextObservation, obs_spec.dtype, obs_shape,
                     std::span(t.next_observation).subspan(b * obs_bytes, r * obs_bytes)}};
    batch.priorities = std::span(t.priority).subspan(b, r);
    batch.policy_version = t.policy_version[b];
    writer_.AppendShared(batch, owner);
    begin = end;
  }
  MutexLock lock(mu_);
  stats_.transitions += n;
}

void Actor::Run(const std::function<void(const EpisodeStats&)>& on_episode) {
  const std::int64_t m = env_.num_envs();
  const std::size_t obs_bytes = env_.observation_bytes();
  Rng rng(DeriveSeed(options_.seed, static_cast<std::uint64_t>(options_.actor_id)));
  std::uint64_t env_seed =
      DeriveSeed(options_.seed ^ 0x5eedULL, static_cast<std::uint64_t>(options_.actor_id));
  if (options_.start_steps > 0) {
    env_seed = DeriveSeed(env_seed, static_cast<std::uint64_t>(options_.start_steps));
  }
  env_.Reset(env_seed);

  const std::size_t action_bytes = policy_->action_bytes();
  std::vector<float> values(static_cast<std::size_t>(m));
  std::vector<float> q_taken(static_cast<std::size_t>(m));
  std::vector<std::byte> actions(static_cast<std::size_t>(m) * action_bytes);
  std::vector<std::byte> observations(static_cast<std::size_t>(m) * obs_bytes);
  std::vector<std::byte> final_rows;
  std::vector<float> final_values;
  std::deque<double> recent_returns;

  const auto start = Clock::now();
  auto last_refresh = start;
  std::int64_t steps = 0;
  std::int64_t iteration = 0;
  RefreshWeights();
  while (!stop_ && (options_.max_steps == 0 || steps < options_.max_steps)) {
    epsilon_ = Epsilon(options_.exploration, options_.actor_id, options_.num_actors,
                       options_.start_steps + steps);
    std::memcpy(observations.data(), env_.observations(), observations.size());
    policy_->Act(observations, m, epsilon_, rng, actions, q_taken, values);
    n_step_.SetCurrentValues(values);
    SendReady(false);  // every ready transition has its priority now

    bool stepped = false;
    try {
      stepped = StepEnvs(actions, env_seed);
    } catch (const Cancelled&) {
      if (!stop_) throw;
      break;  // stopped while a hung env was stepping
    }
    if (!stepped) continue;
    const auto mm = static_cast<std::size_t>(m);
    n_step_.Observe({observations,
                     actions,
                     q_taken,
                     {env_.rewards(), mm},
                     {env_.terminated(), mm},
                     {env_.truncated(), mm},
                     {env_.observations(), mm * obs_bytes},
                     {env_.final_observations(), mm * obs_bytes},
                     policy_version_,
                     {env_.reset_steps(), mm}});
    BootstrapTruncated(final_rows, final_values);
    steps += m;
    ++iteration;
    std::int64_t finished = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      if (!env_.done(i)) continue;
      ++finished;
      const EpisodeStats episode{options_.actor_id, env_.episode_return(i), env_.episode_length(i),
                                 epsilon_, policy_version_};
      recent_returns.push_back(episode.episode_return);
      if (recent_returns.size() > 100) recent_returns.pop_front();
      if (on_episode) on_episode(episode);
    }
    const auto now = Clock::now();
    if (iteration % options_.refresh_steps == 0 ||
        now - last_refresh >= options_.refresh_interval) {
      RefreshWeights();
      last_refresh = now;
    }
    MutexLock lock(mu_);
    stats_.env_steps = steps;
    stats_.episodes += finished;
    if (finished > 0) {
      double sum = 0;
      for (double r : recent_returns) sum += r;
      stats_.mean_recent_return = sum / static_cast<double>(recent_returns.size());
    }
    stats_.steps_per_sec = static_cast<double>(steps) /
                           std::max(1e-9, std::chrono::duration<double>(now - start).count());
  }
  SendRemaining(observations, values);
}

void Actor::BootstrapTruncated(std::vector<std::byte>& final_rows,
                               std::vector<float>& final_values) {
  const auto& truncated = n_step_.truncated_envs();
  if (truncated.empty()) return;
  // V(final observation) for the time-limit bootstrap: one small batch.
  const std::size_t obs_bytes = env_.observation_bytes();
  const auto k = static_cast<std::int64_t>(truncated.size());
  final_rows.resize(truncated.size() * obs_bytes);
  for (std::size_t j = 0; j < truncated.size(); ++j) {
    const auto row = env_.final_observation(truncated[j]);
    std::memcpy(final_rows.data() + j * obs_bytes, row.data(), obs_bytes);
  }
  final_values.resize(truncated.size());
  policy_->Values(final_rows, k, final_values);
  n_step_.SetFinalValues(final_values);
}

void Actor::SendRemaining(std::vector<std::byte>& observations, std::vector<float>& values) {
  // The last step's transitions get their priorities from the current
  // observations, so that stopping loses none of what the actor holds.
  std::memcpy(observations.data(), env_.observations(), observations.size());
  policy_->Values(observations, env_.num_envs(), values);
  n_step_.SetCurrentValues(values);
  SendReady(true);
  writer_.Flush(std::chrono::seconds(5));
  // What did not make it within the flush is dropped and counted now, so
  // that stats() after Run (the actor's exit line) includes it.
  writer_.Close();
}

ActorStats Actor::stats() const {
  MutexLock lock(mu_);
  ActorStats s = stats_;
  s.writer = writer_.stats();
  return s;
}

}  // namespace rlswarm::actors
