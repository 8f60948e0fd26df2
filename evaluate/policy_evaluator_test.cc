// PolicyEvaluator: greedy evaluation on fixed seeds, stopped early once the
// target is out of reach.

#include "evaluate/policy_evaluator.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/errors.h"
#include "envs/registry.h"
#include "models/model_spec.h"
#include "models/q_networks.h"
#include "models/weights_wire.h"

namespace rlswarm::evaluate {
namespace {

// The default model (an MLP of 64 x 64, as configs/*.yaml use) for `env`.
models::ModelSpec DefaultMlp(const std::string& env) {
  const envs::EnvSpec spec = envs::MakeEnv(env, {})->spec();
  models::MlpOptions o;
  o.input_dim = spec.observation.shape.at(0);
  o.hidden_sizes = {64, 64};
  o.num_actions = spec.action.num_actions;
  return models::MakeMlpSpec(o);
}

class PolicyEvaluatorTest : public ::testing::Test {
 protected:
  PolicyEvaluatorOptions Options() const {
    PolicyEvaluatorOptions o;
    o.env_name = "CartPole-v1";
    o.env.num_envs = 10;
    o.episodes = 30;
    o.seed = 5;
    return o;
  }
  // An untrained network: it balances the pole for a few dozen steps.
  std::vector<Payload> Weights() const {
    return models::EncodeWeights(models::InitNamedParameters(spec_, 3));
  }
  models::ModelSpec spec_ = DefaultMlp("CartPole-v1");
};

TEST_F(PolicyEvaluatorTest, RunsEveryEpisodeWithoutATargetAndRepeatsExactly) {
  PolicyEvaluator evaluator(Options(), spec_, 0);
  const Evaluation a = evaluator.Evaluate(Weights(), 7);
  EXPECT_TRUE(a.complete);
  EXPECT_FALSE(a.reached_target);
  EXPECT_EQ(a.episodes, 30);
  EXPECT_EQ(a.version, 7u);
  EXPECT_GT(a.mean_return, 0);
  EXPECT_LT(a.mean_return, 475);
  // Fixed seeds, greedy: the same weights score the same, whatever ran before.
  const Evaluation b = evaluator.Evaluate(Weights(), 8);
  EXPECT_EQ(a.mean_return, b.mean_return);
  EXPECT_EQ(a.env_steps, b.env_steps);
}

TEST_F(PolicyEvaluatorTest, StopsAsSoonAsTheTargetIsOutOfReach) {
  PolicyEvaluatorOptions o = Options();
  o.target_return = 475;
  o.episode_return_bound = 500;
  PolicyEvaluator evaluator(o, spec_, 0);
  const Evaluation e = evaluator.Evaluate(Weights(), 1);
  EXPECT_FALSE(e.complete);
  EXPECT_FALSE(e.reached_target);
  // 30 x 475 needs every episode within 750 of the bound in total: a policy
  // that returns < 100 per episode is out of reach after 2 episodes.
  EXPECT_GE(e.episodes, 1);
  EXPECT_LE(e.episodes, 3);

  // A target it does reach: every episode runs, and it counts as solved.
  o.target_return = 1;
  PolicyEvaluator easy(o, spec_, 0);
  const Evaluation solved = easy.Evaluate(Weights(), 1);
  EXPECT_TRUE(solved.complete);
  EXPECT_TRUE(solved.reached_target);
}

TEST_F(PolicyEvaluatorTest, EpisodesThatNeverEndAreCutOffByTheTimeLimitOrACancel) {
  // MountainCar without its time limit: an untrained policy never reaches
  // the flag, so no episode ever ends.
  PolicyEvaluatorOptions o;
  o.env_name = "MountainCar-v0";
  o.env.env.max_episode_steps = 0;
  o.env.seeding = envs::AutoResetSeeding::kSeedPerEpisode;
  o.env.num_envs = 4;
  o.episodes = 4;
  o.time_limit_s = 0.2;
  const models::ModelSpec spec = DefaultMlp("MountainCar-v0");
  PolicyEvaluator evaluator(o, spec, 0);
  const auto weights = models::EncodeWeights(models::InitNamedParameters(spec, 3));
  const Evaluation timed_out = evaluator.Evaluate(weights, 1);
  EXPECT_FALSE(timed_out.complete);
  EXPECT_EQ(timed_out.episodes, 0);
  EXPECT_GE(timed_out.seconds, 0.2);
  EXPECT_LT(timed_out.seconds, 30);

  o.time_limit_s = 0;
  PolicyEvaluator unbounded(o, spec, 0);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  const Evaluation cancelled = unbounded.Evaluate(weights, 1, &cancel);
  canceller.join();
  EXPECT_FALSE(cancelled.complete);
  EXPECT_EQ(cancelled.episodes, 0);
}

// launch.eval_epsilon: weights whose greedy action is always "push left"
// topple the pole in ~9 steps; with epsilon 1 the actions are uniform and
// CartPole lasts ~22 steps on average.
TEST_F(PolicyEvaluatorTest, EpsilonGreedyEvaluationsActWithTheGivenNoise) {
  models::NamedTensors named = models::InitNamedParameters(spec_, 0);
  for (auto& [name, t] : named) {
    t = at::zeros_like(t).to(at::kFloat);
    if (name == "head.bias") t[0] = 5.0;
  }
  const std::vector<Payload> always_left = models::EncodeWeights(named);
  PolicyEvaluator greedy(Options(), spec_, 0);
  PolicyEvaluatorOptions noisy_options = Options();
  noisy_options.epsilon = 1.0;
  PolicyEvaluator noisy(noisy_options, spec_, 0);
  const Evaluation g = greedy.Evaluate(always_left, 1);
  const Evaluation n = noisy.Evaluate(always_left, 1);
  EXPECT_LT(g.mean_return, 12);
  EXPECT_GT(n.mean_return, 15);
  PolicyEvaluatorOptions bad = Options();
  bad.epsilon = 1.5;
  EXPECT_THROW(PolicyEvaluator(bad, spec_, 0), InvalidArgument);
}

TEST_F(PolicyEvaluatorTest, RejectsWeightsOfAnotherModel) {
  PolicyEvaluator evaluator(Options(), spec_, 0);
  models::ModelSpec other = spec_;
  other.layers.pop_back();
  EXPECT_THROW(evaluator.Evaluate(models::EncodeWeights(models::InitNamedParameters(other, 1)), 1),
               InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::evaluate
