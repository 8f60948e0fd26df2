#include "envs/episode_runner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"

namespace rlswarm::envs {

RandomPolicy::RandomPolicy(const EnvSpec& spec, std::int64_t num_envs, std::uint64_t seed)
    : spec_(spec), seed_(seed), rngs_(num_envs) {}

void RandomPolicy::OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) {
  // Offset the stream from the env's own seed stream of the same episode.
  rngs_[slot].Seed(DeriveSeed(seed_ ^ 0x5eed0f7a11c1e5ULL, episode_id));
}

void RandomPolicy::Act(const VectorEnv& env, std::span<std::int64_t> discrete,
                       std::span<float> continuous) {
  if (spec_.action.kind == ActionKind::kDiscrete) {
    for (std::int64_t i = 0; i < env.num_envs(); ++i) {
      discrete[i] = static_cast<std::int64_t>(rngs_[i].Below(spec_.action.num_actions));
    }
    return;
  }
  const ArraySpec& a = spec_.action.array;
  const std::int64_t size = a.NumElements();
  for (std::int64_t i = 0; i < env.num_envs(); ++i) {
    for (std::int64_t j = 0; j < size; ++j) {
      // Uniform in [low, high], computed in float so it never leaves the bounds.
      const float u = static_cast<float>(rngs_[i].Uniform01());
      const float low = static_cast<float>(a.Low(j)), high = static_cast<float>(a.High(j));
      continuous[i * size + j] = std::clamp(low + (high - low) * u, low, high);
    }
  }
}

std::vector<EpisodeResult> RunEpisodes(VectorEnv& env, BatchPolicy& policy,
                                       std::int64_t num_episodes, std::uint64_t seed,
                                       const EpisodeCallback& keep_going,
                                       const std::function<bool()>& cancelled) {
  if (num_episodes < 1) {
    throw InvalidArgument("episodes must be >= 1, got " + std::to_string(num_episodes));
  }
  if (env.seeding() != AutoResetSeeding::kSeedPerEpisode) {
    throw InvalidArgument("RunEpisodes needs a VectorEnv with AutoResetSeeding::kSeedPerEpisode");
  }
  const std::int64_t n = env.num_envs();
  const bool discrete = env.spec().action.kind == ActionKind::kDiscrete;
  std::vector<std::int64_t> discrete_actions(discrete ? n : 0);
  std::vector<float> continuous_actions(discrete ? 0 : n * env.spec().action.array.NumElements());

  std::vector<EpisodeResult> results;
  results.reserve(num_episodes);
  env.Reset(seed);
  for (std::int64_t i = 0; i < n; ++i) policy.OnEpisodeStart(i, env.episode_id(i));
  // Episodes with id >= num_episodes may start in idle slots near the end;
  // they are run but not counted, so the result never depends on n.
  std::int64_t remaining = num_episodes;
  std::vector<std::uint64_t> ids_before(n);
  while (remaining > 0) {
    if (cancelled && cancelled()) break;
    policy.Act(env, discrete_actions, continuous_actions);
    // Ids before the step: a done slot reports the episode that just ended.
    for (std::int64_t i = 0; i < n; ++i) ids_before[i] = env.episode_id(i);
    if (discrete) {
      env.Step(std::span<const std::int64_t>(discrete_actions));
    } else {
      env.Step(std::span<const float>(continuous_actions));
    }
    for (std::int64_t i = 0; i < n; ++i) {
      if (!env.done(i)) continue;
      if (ids_before[i] < static_cast<std::uint64_t>(num_episodes)) {
        results.push_back({ids_before[i], env.episode_return(i), env.episode_length(i)});
        --remaining;
        if (keep_going && !keep_going(results.back())) {
          remaining = 0;
          break;  // count nothing after the callback said stop
        }
      }
      policy.OnEpisodeStart(i, env.episode_id(i));
    }
  }
  std::sort(results.begin(), results.end(), [](const EpisodeResult& a, const EpisodeResult& b) {
    return a.episode_id < b.episode_id;
  });
  return results;
}

ReturnSummary Summarize(const std::vector<EpisodeResult>& episodes) {
  ReturnSummary s;
  s.episodes = static_cast<std::int64_t>(episodes.size());
  if (episodes.empty()) return s;
  double sum = 0.0, length_sum = 0.0;
  s.min_return = s.max_return = episodes[0].episode_return;
  for (const auto& e : episodes) {
    sum += e.episode_return;
    length_sum += static_cast<double>(e.length);
    s.min_return = std::min(s.min_return, e.episode_return);
    s.max_return = std::max(s.max_return, e.episode_return);
  }
  s.mean_return = sum / s.episodes;
  s.mean_length = length_sum / s.episodes;
  double squares = 0.0;
  for (const auto& e : episodes)
    squares += (e.episode_return - s.mean_return) * (e.episode_return - s.mean_return);
  s.std_return = std::sqrt(squares / s.episodes);
  return s;
}

}  // namespace rlswarm::envs
