#include "evaluate/policy_evaluator.h"

#include <chrono>

#include "actors/acting_policy.h"
#include "common/errors.h"
#include "envs/env_failure.h"
#include "envs/episode_runner.h"

namespace rlswarm::evaluate {
namespace {

envs::VectorEnvOptions PerEpisodeSeeding(envs::VectorEnvOptions o) {
  o.seeding = envs::AutoResetSeeding::kSeedPerEpisode;
  return o;
}

}  // namespace

PolicyEvaluator::PolicyEvaluator(PolicyEvaluatorOptions options,
                                 const actors::ActingNetworks& networks)
    : options_(std::move(options)), env_(options_.env_name, PerEpisodeSeeding(options_.env)) {
  if (options_.episodes < 1) throw InvalidArgument("evaluation episodes must be >= 1");
  if (!(options_.epsilon >= 0 && options_.epsilon <= 1)) {
    throw InvalidArgument("evaluation epsilon must be in [0, 1]");
  }
  network_ = actors::MakeActingPolicy(networks, env_.spec());
  policy_ = network_->MakeEvaluationPolicy(env_.num_envs(), options_.epsilon, options_.seed);
}

PolicyEvaluator::PolicyEvaluator(PolicyEvaluatorOptions options, const models::ModelSpec& model,
                                 std::uint64_t model_seed)
    : PolicyEvaluator(std::move(options), actors::ActingNetworks{model, std::nullopt, model_seed}) {
}

PolicyEvaluator::~PolicyEvaluator() = default;

Evaluation PolicyEvaluator::Evaluate(const std::vector<Payload>& weights, std::uint64_t version,
                                     const std::atomic<bool>* cancel) {
  network_->LoadWeights(weights);
  const auto start = std::chrono::steady_clock::now();
  // Stop once even the best case (every unfinished episode at the bound)
  // cannot bring the mean up to the target.
  double sum = 0;
  std::int64_t finished = 0;
  const bool can_miss = options_.target_return && options_.episode_return_bound;
  const double needed =
      can_miss ? *options_.target_return * static_cast<double>(options_.episodes) : 0;
  const auto deadline =
      start + std::chrono::microseconds(static_cast<std::int64_t>(options_.time_limit_s * 1e6));
  envs::EpisodeCallback keep_going = [&](const envs::EpisodeResult& e) {
    sum += e.episode_return;
    ++finished;
    return !can_miss || sum + *options_.episode_return_bound *
                                    static_cast<double>(options_.episodes - finished) >=
                            needed;
  };
  std::int64_t steps = 0;
  auto cancelled = [&] {
    if (cancel && cancel->load()) return true;
    // The clock every 64 steps: a step of a few envs costs well under a
    // microsecond.
    return options_.time_limit_s > 0 && (++steps & 63) == 0 &&
           std::chrono::steady_clock::now() >= deadline;
  };
  std::vector<envs::EpisodeResult> episodes;
  try {
    episodes =
        envs::RunEpisodes(env_, *policy_, options_.episodes, options_.seed, keep_going, cancelled);
  } catch (const envs::EnvFailure&) {
    // The next evaluation starts from a new worker, not a broken env.
    env_.Restart(options_.seed);
    throw;
  }
  const envs::ReturnSummary s = envs::Summarize(episodes);
  Evaluation e;
  e.version = version;
  e.episodes = s.episodes;
  e.complete = s.episodes == options_.episodes;
  e.mean_return = s.mean_return;
  e.std_return = s.std_return;
  e.min_return = s.min_return;
  e.max_return = s.max_return;
  for (const auto& r : episodes) e.env_steps += r.length;
  e.reached_target =
      e.complete && options_.target_return && e.mean_return >= *options_.target_return;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

}  // namespace rlswarm::evaluate
