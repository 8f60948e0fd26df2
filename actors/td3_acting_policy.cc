#include "actors/td3_acting_policy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/errors.h"

namespace rlswarm::actors {
namespace {

// Greedy (sigma 0) or noisy episodes of the policy, each episode's noise
// seeded from (seed, episode id) as envs::RunEpisodes requires.
class Td3EvaluationPolicy final : public envs::BatchPolicy {
 public:
  Td3EvaluationPolicy(Td3ActingPolicy& acting, std::int64_t num_envs, double sigma,
                      std::uint64_t seed,
                      std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation)
      : acting_(acting),
        sigma_(sigma),
        seed_(seed),
        on_observation_(std::move(on_observation)),
        rngs_(static_cast<std::size_t>(num_envs)),
        episode_ids_(static_cast<std::size_t>(num_envs), 0),
        steps_(static_cast<std::size_t>(num_envs), 0) {}

  void OnEpisodeStart(std::int64_t slot, std::uint64_t episode_id) override {
    rngs_[slot].Seed(DeriveSeed(seed_ ^ 0x7d3eULL, episode_id));
    episode_ids_[slot] = episode_id;
    steps_[slot] = 0;
  }

  void Act(const envs::VectorEnv& env, std::span<std::int64_t>,
           std::span<float> continuous) override {
    const std::int64_t m = env.num_envs();
    const std::int64_t a = acting_.network().action_dim();
    acting_.network().Actions(
        {env.observations(), static_cast<std::size_t>(m) * env.observation_bytes()}, m,
        continuous.first(static_cast<std::size_t>(m * a)));
    for (std::int64_t i = 0; i < m; ++i) {
      if (on_observation_) on_observation_(i, episode_ids_[i], steps_[i]);
      ++steps_[i];
      acting_.Explore(
          continuous.subspan(static_cast<std::size_t>(i * a), static_cast<std::size_t>(a)), sigma_,
          rngs_[i]);
    }
  }

 private:
  Td3ActingPolicy& acting_;
  double sigma_;
  std::uint64_t seed_;
  std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation_;
  std::vector<Rng> rngs_;
  std::vector<std::uint64_t> episode_ids_;
  std::vector<std::int64_t> steps_;
};

}  // namespace

Td3ActingPolicy::Td3ActingPolicy(const models::ModelSpec& policy, const models::ModelSpec* critic,
                                 std::uint64_t seed, const envs::EnvSpec& env)
    : network_(policy, critic, seed, env.observation.dtype), action_shape_(env.action.array.shape) {
  if (env.action.kind != envs::ActionKind::kContinuous) {
    throw InvalidArgument("actor: " + env.name +
                          " has discrete actions (TD3 needs continuous; learner.algorithm: dqn)");
  }
  const std::int64_t dim = env.action.array.NumElements();
  if (network_.observation_bytes() != env.observation.NumBytes() || network_.action_dim() != dim) {
    throw InvalidArgument("actor: the policy does not fit " + env.name);
  }
  for (std::int64_t i = 0; i < dim; ++i) {
    low_.push_back(static_cast<float>(env.action.array.Low(i)));
    high_.push_back(static_cast<float>(env.action.array.High(i)));
  }
}

void Td3ActingPolicy::Explore(std::span<float> row, double sigma, Rng& rng) const {
  for (std::size_t j = 0; j < row.size(); ++j) {
    // The draw happens whatever sigma is, so greedy and noisy runs consume
    // the same stream.
    const double noise = rng.Normal();
    const double half = 0.5 * (static_cast<double>(high_[j]) - low_[j]);
    row[j] = std::clamp(static_cast<float>(row[j] + sigma * half * noise), low_[j], high_[j]);
  }
}

void Td3ActingPolicy::Act(std::span<const std::byte> observations, std::int64_t rows, double sigma,
                          Rng& rng, std::span<std::byte> actions, std::span<float> q_taken,
                          std::span<float> values) {
  const auto r = static_cast<std::size_t>(rows);
  const auto a = static_cast<std::size_t>(network_.action_dim());
  mu_.resize(r * a);
  network_.Actions(observations, rows, mu_);
  // One critic pass over [(s, a); (s, mu(s))]: Q1 of the taken actions and V.
  both_actions_.resize(2 * r * a);
  std::memcpy(both_actions_.data() + r * a, mu_.data(), r * a * sizeof(float));
  for (std::size_t i = 0; i < r; ++i) {
    std::span<float> row(both_actions_.data() + i * a, a);
    std::copy_n(mu_.data() + i * a, a, row.data());
    Explore(row, sigma, rng);
  }
  std::memcpy(actions.data(), both_actions_.data(), r * a * sizeof(float));
  both_obs_.resize(2 * observations.size());
  std::memcpy(both_obs_.data(), observations.data(), observations.size());
  std::memcpy(both_obs_.data() + observations.size(), observations.data(), observations.size());
  both_q_.resize(2 * r);
  network_.FirstCritic(both_obs_, both_actions_, 2 * rows, both_q_);
  std::copy_n(both_q_.data(), r, q_taken.data());
  std::copy_n(both_q_.data() + r, r, values.data());
}

void Td3ActingPolicy::Values(std::span<const std::byte> observations, std::int64_t rows,
                             std::span<float> values) {
  mu_.resize(static_cast<std::size_t>(rows * network_.action_dim()));
  network_.Actions(observations, rows, mu_);
  network_.FirstCritic(observations, mu_, rows, values);
}

std::unique_ptr<envs::BatchPolicy> Td3ActingPolicy::MakeEvaluationPolicy(
    std::int64_t num_envs, double sigma, std::uint64_t seed,
    std::function<void(std::int64_t, std::uint64_t, std::int64_t)> on_observation) {
  if (!(sigma >= 0)) throw InvalidArgument("evaluation noise must be >= 0");
  return std::make_unique<Td3EvaluationPolicy>(*this, num_envs, sigma, seed,
                                               std::move(on_observation));
}

}  // namespace rlswarm::actors
