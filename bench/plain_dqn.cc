// plain_dqn: the simplest program that does the default job's work: one
// process, one thread, no replay service, no sockets. It reads the same
// config as `rlswarm launch` and trains the same DQN (network, batch, n-step
// returns, exploration schedule, replay ratio, target updates) with a
// uniform replay buffer in its own memory and the plain update of
// plain_dqn_update.h, and judges the same greedy evaluations (PolicyEvaluator
// on launch.eval_episodes fixed-seed episodes, at most every
// launch.eval_interval_s, of weights at least publish_interval updates
// newer) with the same criterion (launch.target_return). Its times count
// from process start, as `rlswarm launch`'s do, so bench/e2e.sh can put
// the two side by side in one run.
//
//   plain_dqn CONFIG [section.key=value ...]
//
// Prints one JSON object: solved, time_to_solve_s, env_steps_to_solve,
// updates, final_eval_mean_return (of the solving evaluation, else of the
// last), and where the time went: startup_s (process start to the first
// env step), learning_start_s (to the first update), and the seconds spent
// acting, updating and evaluating.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "actors/exploration.h"
#include "bench/plain_dqn_update.h"
#include "common/errors.h"
#include "common/random.h"
#include "config/experiment_config.h"
#include "config/role_options.h"
#include "envs/vector_env.h"
#include "evaluate/policy_evaluator.h"
#include "launch/run_directory.h"
#include "models/dtype_translation.h"
#include "models/weights_wire.h"

namespace {

namespace rs = rlswarm;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A uniform ring buffer of n-step transitions, column-wise tensors.
class UniformReplay {
 public:
  UniformReplay(int64_t capacity, const rs::envs::EnvSpec& env)
      : capacity_(capacity), obs_bytes_(env.observation.NumBytes()) {
    std::vector<int64_t> shape{capacity};
    shape.insert(shape.end(), env.observation.shape.begin(), env.observation.shape.end());
    const at::ScalarType obs_type = rs::models::ToScalarType(env.observation.dtype);
    observation_ = at::empty(shape, obs_type);
    next_observation_ = at::empty(shape, obs_type);
    action_ = at::empty({capacity}, at::kLong);
    reward_ = at::empty({capacity}, at::kFloat);
    discount_ = at::empty({capacity}, at::kFloat);
  }

  void Add(const std::byte* obs, int64_t action, float reward, float discount,
           const std::byte* next_obs) {
    const int64_t i = next_;
    std::memcpy(static_cast<std::byte*>(observation_.data_ptr()) + i * obs_bytes_, obs, obs_bytes_);
    std::memcpy(static_cast<std::byte*>(next_observation_.data_ptr()) + i * obs_bytes_, next_obs,
                obs_bytes_);
    action_.data_ptr<int64_t>()[i] = action;
    reward_.data_ptr<float>()[i] = reward;
    discount_.data_ptr<float>()[i] = discount;
    next_ = (next_ + 1) % capacity_;
    size_ = std::min(size_ + 1, capacity_);
    ++inserted_;
  }

  rs::bench::PlainDqnBatch Sample(int64_t batch, at::Generator& gen) const {
    const at::Tensor rows = at::randint(size_, {batch}, gen, at::kLong);
    return {observation_.index_select(0, rows),      action_.index_select(0, rows),
            reward_.index_select(0, rows),           discount_.index_select(0, rows),
            next_observation_.index_select(0, rows), at::Tensor()};
  }

  int64_t size() const { return size_; }
  int64_t inserted() const { return inserted_; }

 private:
  int64_t capacity_;
  size_t obs_bytes_;
  at::Tensor observation_, next_observation_, action_, reward_, discount_;
  int64_t next_ = 0, size_ = 0, inserted_ = 0;
};

// n-step returns per env (Ape-X: R = sum_k gamma^k r_{t+k}, discount
// gamma^n, or 0 at a terminal step), with the time-limit bootstrap of the
// actors: a truncated episode's pending steps bootstrap from its final
// observation.
class NStepReturns {
 public:
  NStepReturns(int64_t num_envs, int n, double gamma, size_t obs_bytes)
      : n_(n), gamma_(gamma), obs_bytes_(obs_bytes), pending_(static_cast<size_t>(num_envs)) {}

  // One env's step: s_t, a_t, r_t, and s_{t+1} (the final observation when
  // the episode ended).
  void Observe(int64_t env, const std::byte* obs, int64_t action, float reward, bool terminated,
               bool truncated, const std::byte* next_obs, UniformReplay& replay) {
    std::vector<Pending>& p = pending_[static_cast<size_t>(env)];
    p.push_back({std::vector<std::byte>(obs, obs + obs_bytes_), action, reward});
    if (terminated || truncated) {
      while (!p.empty()) Emit(p, terminated, next_obs, replay);
    } else if (static_cast<int>(p.size()) == n_) {
      Emit(p, false, next_obs, replay);
    }
  }

 private:
  struct Pending {
    std::vector<std::byte> obs;
    int64_t action;
    float reward;
  };

  // The oldest pending step's transition to next_obs, then drops it.
  void Emit(std::vector<Pending>& p, bool terminal, const std::byte* next_obs,
            UniformReplay& replay) {
    double ret = 0, discount = 1;
    for (const Pending& step : p) {
      ret += discount * step.reward;
      discount *= gamma_;
    }
    replay.Add(p.front().obs.data(), p.front().action, static_cast<float>(ret),
               terminal ? 0.0f : static_cast<float>(discount), next_obs);
    p.erase(p.begin());
  }

  int n_;
  double gamma_;
  size_t obs_bytes_;
  std::vector<std::vector<Pending>> pending_;
};

int Run(const std::string& config_file, const std::vector<std::string>& overrides) {
  rs::config::ExperimentConfig config = rs::config::ExperimentConfig::Load(config_file, overrides);
  if (config.learner.algorithm != "dqn") throw rs::InvalidArgument("plain_dqn: dqn configs only");
  at::set_num_threads(1);
  const auto& learner = config.learner;
  const auto& launch = config.launch;
  const int64_t batch = learner.batch_size;
  if (!config.replay.samples_per_insert) {
    throw rs::InvalidArgument(
        "plain_dqn needs replay.samples_per_insert: one thread interleaves acting and learning "
        "at that ratio");
  }
  const double samples_per_insert = *config.replay.samples_per_insert;
  const int64_t min_size = config.replay.min_size_to_sample;

  rs::envs::VectorEnv env(config.env.name,
                          config.env.ToVectorEnvOptions(rs::envs::AutoResetSeeding::kContinue));
  const int64_t m = env.num_envs();
  const size_t obs_bytes = env.observation_bytes();
  std::vector<int64_t> obs_shape{m};
  obs_shape.insert(obs_shape.end(), env.spec().observation.shape.begin(),
                   env.spec().observation.shape.end());
  UniformReplay replay(config.replay.capacity, env.spec());
  NStepReturns n_step(m, config.actor.n_step, config.actor.gamma, obs_bytes);
  const rs::actors::ExplorationOptions exploration = config.actor.ToExplorationOptions();

  rs::bench::PlainDqn dqn(config.ModelSpec(), rs::bench::PlainDqnOptionsOf(config));

  rs::evaluate::PolicyEvaluator evaluator(rs::config::MakeEvaluatorOptions(config),
                                          config.ModelSpec(), config.model.seed);
  at::Generator gen = at::detail::createCPUGenerator(config.learner.seed);
  std::mt19937_64 rng(rs::DeriveSeed(config.actor.seed, 0));
  std::uniform_real_distribution<double> unit(0, 1);
  std::uniform_int_distribution<int64_t> random_action(0, env.spec().action.num_actions - 1);
  env.Reset(rs::DeriveSeed(config.actor.seed ^ 0x5eedULL, 0));

  const double startup_s = rs::launch::SecondsSinceProcessStart();
  const auto t0 = Clock::now();
  auto elapsed = [&] { return startup_s + Seconds(Clock::now() - t0); };
  double acting_s = 0, updating_s = 0, evaluating_s = 0;
  std::optional<double> learning_start_s, time_to_solve_s;
  std::optional<int64_t> env_steps_to_solve;
  std::optional<rs::evaluate::Evaluation> judged;
  int64_t env_steps = 0, evaluations = 0, evaluated_version = 0;
  auto next_eval = Clock::now();
  std::vector<std::byte> obs(static_cast<size_t>(m) * obs_bytes);
  std::vector<int64_t> actions(static_cast<size_t>(m));

  while (!time_to_solve_s && (launch.max_wall_time_s == 0 || elapsed() < launch.max_wall_time_s) &&
         (launch.max_env_steps == 0 || env_steps < launch.max_env_steps)) {
    auto t = Clock::now();
    const double epsilon = rs::actors::Epsilon(exploration, 0, 1, env_steps);
    std::memcpy(obs.data(), env.observations(), obs.size());
    const at::Tensor greedy = dqn.GreedyActions(at::from_blob(
        obs.data(), obs_shape, rs::models::ToScalarType(env.spec().observation.dtype)));
    const int64_t* g = greedy.data_ptr<int64_t>();
    for (int64_t i = 0; i < m; ++i) actions[i] = unit(rng) < epsilon ? random_action(rng) : g[i];
    env.Step(std::span<const int64_t>(actions));
    for (int64_t i = 0; i < m; ++i) {
      const bool ended = env.done(i);
      n_step.Observe(i, obs.data() + i * obs_bytes, actions[i], env.rewards()[i],
                     env.terminated()[i], env.truncated()[i],
                     ended ? env.final_observation(i).data() : env.observation(i).data(), replay);
    }
    env_steps += m;
    acting_s += Seconds(Clock::now() - t);

    // Reverb's ratio (replay/rate_limiter.h): once min_size items are in,
    // samples keep pace with samples_per_insert per insert.
    t = Clock::now();
    while (replay.size() >= min_size &&
           static_cast<double>(dqn.updates() + 1) * batch <=
               static_cast<double>(replay.inserted() - min_size) * samples_per_insert) {
      if (!learning_start_s) learning_start_s = elapsed();
      dqn.Update(replay.Sample(batch, gen));
    }
    updating_s += Seconds(Clock::now() - t);

    const int64_t version =
        dqn.updates() - dqn.updates() % std::max<int64_t>(1, learner.publish_interval);
    if (version > evaluated_version && Clock::now() >= next_eval) {
      t = Clock::now();
      next_eval = t + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(launch.eval_interval_s));
      const rs::evaluate::Evaluation e = evaluator.Evaluate(
          rs::models::EncodeWeights(dqn.NamedParameters()), static_cast<uint64_t>(version));
      evaluated_version = version;
      ++evaluations;
      if (e.complete) judged = e;
      if (e.reached_target) {
        time_to_solve_s = elapsed();
        env_steps_to_solve = env_steps;
      }
      evaluating_s += Seconds(Clock::now() - t);
    }
  }

  nlohmann::json out = {{"bench", "plain_dqn"},
                        {"config", config_file},
                        {"solved", time_to_solve_s.has_value()},
                        {"time_to_solve_s", nullptr},
                        {"env_steps_to_solve", nullptr},
                        {"updates", dqn.updates()},
                        {"env_steps", env_steps},
                        {"evaluations", evaluations},
                        {"final_eval_mean_return", nullptr},
                        {"startup_s", startup_s},
                        {"learning_start_s", nullptr},
                        {"acting_s", acting_s},
                        {"updating_s", updating_s},
                        {"evaluating_s", evaluating_s},
                        {"wall_s", elapsed()}};
  if (time_to_solve_s) {
    out["time_to_solve_s"] = *time_to_solve_s;
    out["env_steps_to_solve"] = *env_steps_to_solve;
  }
  if (judged) out["final_eval_mean_return"] = judged->mean_return;
  if (learning_start_s) out["learning_start_s"] = *learning_start_s;
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the default job as one plain single-threaded LibTorch DQN program"};
  std::string config_file;
  std::vector<std::string> overrides;
  app.add_option("config", config_file, "Experiment config (YAML)")->required();
  app.add_option("overrides", overrides, "section.key=value");
  CLI11_PARSE(app, argc, argv);
  try {
    return Run(config_file, overrides);
  } catch (const std::exception& e) {
    std::cerr << "plain_dqn: " << e.what() << std::endl;
    return 1;
  }
}
