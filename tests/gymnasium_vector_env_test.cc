// The Gymnasium path with real Python workers: scripted envs
// (envs/gymnasium/testing/rlswarm_test_envs.py) in each autoreset mode, the spaces, the
// errors, a crashing and a hung env. Needs a Python with gymnasium (the
// repository's .venv/, scripts/setup.sh --python); skipped without one.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "envs/episode_runner.h"
#include "envs/gymnasium/env_worker.h"
#include "envs/registry.h"
#include "envs/vector_env.h"
#include "replay/service/n_step.h"

namespace rlswarm::envs {
namespace {

using gymnasium::EnvFailure;
using namespace std::chrono_literals;

constexpr const char* kCounter = "gymnasium:rlswarm_test_envs:Counter-v0";
constexpr const char* kFaulty = "gymnasium:rlswarm_test_envs:Faulty-v0";

class GymnasiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(RLSWARM_TEST_PYTHON)) {
      GTEST_SKIP() << "no " << RLSWARM_TEST_PYTHON << " (scripts/setup.sh --python makes it)";
    }
    ::setenv("PYTHONPATH", RLSWARM_TEST_ENVS_DIR, 1);
  }

  static VectorEnvOptions Options(std::int64_t num_envs, std::optional<std::string> autoreset = {},
                                  std::string kwargs = "") {
    VectorEnvOptions o;
    o.num_envs = num_envs;
    o.env.python = RLSWARM_TEST_PYTHON;
    o.env.vectorization_mode = "sync";
    o.env.autoreset_mode = std::move(autoreset);
    o.env.kwargs_json = std::move(kwargs);
    return o;
  }
};

// Counter-v0 observations: [episode, t, 0, 0].
struct CounterObs {
  float episode;
  float t;
};
CounterObs Read(const std::byte* row) {
  float v[4];
  std::memcpy(v, row, sizeof(v));
  return {v[0], v[1]};
}

class AutoresetModeTest : public GymnasiumTest,
                          public ::testing::WithParamInterface<std::string> {};

// Whatever the mode: every stored transition stays within one episode
// (next = the same episode one step on, or its final observation), its reward
// belongs to its own action, terminal transitions do not bootstrap, truncated
// ones do, and the action a next-step reset ignores is never stored.
TEST_P(AutoresetModeTest, EveryStoredTransitionStaysWithinItsEpisode) {
  const std::int64_t m = 3;
  VectorEnv env(kCounter, Options(m, GetParam()));
  EXPECT_EQ(env.autoreset(),
            GetParam() == "next_step" ? AutoResetMode::kNextStep : AutoResetMode::kSameStep);
  const std::size_t obs_bytes = env.observation_bytes();
  replay::NStepAccumulator n_step({.n = 1, .gamma = 1.0}, m, obs_bytes, sizeof(std::int64_t));
  env.Reset(7);
  std::vector<std::int64_t> actions(m);
  std::vector<float> zeros(m, 0.0f);
  std::vector<std::byte> obs(m * obs_bytes);
  std::int64_t steps_taken = 0;
  std::int64_t ignored = 0;
  std::int64_t terminal = 0;
  std::int64_t truncated = 0;
  std::vector<std::int64_t> stored_actions;
  for (int step = 0; step < 60; ++step) {
    n_step.SetCurrentValues(zeros);
    std::memcpy(obs.data(), env.observations(), obs.size());
    for (std::int64_t i = 0; i < m; ++i) actions[i] = (step + i) % 3;
    env.Step(actions);
    for (std::int64_t i = 0; i < m; ++i) {
      if (env.reset_steps()[i]) {
        ++ignored;
        // The new episode starts at t = 0.
        EXPECT_EQ(Read(env.observation(i).data()).t, 0.0f);
      } else {
        ++steps_taken;
      }
    }
    n_step.Observe({obs,
                    std::as_bytes(std::span(actions)),
                    zeros,
                    {env.rewards(), static_cast<std::size_t>(m)},
                    {env.terminated(), static_cast<std::size_t>(m)},
                    {env.truncated(), static_cast<std::size_t>(m)},
                    {env.observations(), m * obs_bytes},
                    {env.final_observations(), m * obs_bytes},
                    0,
                    {env.reset_steps(), static_cast<std::size_t>(m)}});
    if (!n_step.truncated_envs().empty()) {
      n_step.SetFinalValues(std::vector<float>(n_step.truncated_envs().size(), 0.0f));
    }
    for (std::int64_t i = 0; i < m; ++i) {
      terminal += env.terminated()[i];
      truncated += env.truncated()[i];
    }
  }
  n_step.SetCurrentValues(zeros);
  const replay::TransitionColumns t = n_step.TakeReady();
  // n = 1: every step taken is one transition, except the last one of each
  // env (its successor arrives with the next step), which is already ready
  // too since SetCurrentValues above.
  EXPECT_EQ(t.size(), steps_taken);
  EXPECT_GT(terminal, 0);
  EXPECT_GT(truncated, 0);
  // Every episode end but the last step's is followed by one ignored action.
  if (GetParam() == "next_step") {
    EXPECT_GE(ignored, terminal + truncated - m) << ignored;
  } else {
    EXPECT_EQ(ignored, 0);
  }
  for (std::int64_t r = 0; r < t.size(); ++r) {
    const CounterObs s = Read(t.observation.data() + r * obs_bytes);
    const CounterObs next = Read(t.next_observation.data() + r * obs_bytes);
    std::int64_t action = 0;
    std::memcpy(&action, t.action.data() + r * sizeof(action), sizeof(action));
    EXPECT_EQ(next.episode, s.episode) << "transition " << r << " crosses an episode boundary";
    EXPECT_EQ(next.t, s.t + 1) << "transition " << r;
    EXPECT_EQ(t.reward[r], 100.0f * s.t + static_cast<float>(action)) << "transition " << r;
    const bool last = next.t >= 3 + static_cast<std::int64_t>(s.episode) % 4;
    const bool terminates = last && static_cast<std::int64_t>(s.episode) % 2 == 0;
    EXPECT_EQ(t.discount[r], terminates ? 0.0f : 1.0f) << "transition " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, AutoresetModeTest,
                         ::testing::Values("next_step", "same_step", "disabled"));

TEST_F(GymnasiumTest, SpacesBecomeTheSpecAndFlatActionsDecode) {
  EnvOptions o;
  o.python = RLSWARM_TEST_PYTHON;
  const EnvSpec counter = DescribeEnv(kCounter, o);
  EXPECT_EQ(counter.observation.shape, std::vector<std::int64_t>{4});
  EXPECT_EQ(counter.observation.dtype, DType::kFloat32);
  EXPECT_EQ(counter.action.kind, ActionKind::kDiscrete);
  EXPECT_EQ(counter.action.num_actions, 3);

  VectorEnvOptions v = Options(2);
  VectorEnv env("gymnasium:rlswarm_test_envs:MultiAction-v0", v);
  EXPECT_EQ(env.spec().action.num_actions, 6);  // MultiDiscrete([2, 3])
  EXPECT_EQ(env.spec().observation.dtype, DType::kInt64);
  env.Reset(1);
  env.Step(std::vector<std::int64_t>{5, 1});
  const auto* obs = reinterpret_cast<const std::int64_t*>(env.observations());
  EXPECT_EQ(obs[0], 1);  // 5 = 1 * 3 + 2
  EXPECT_EQ(obs[1], 2);
  EXPECT_EQ(obs[2], 0);  // 1 = 0 * 3 + 1
  EXPECT_EQ(obs[3], 1);
}

TEST_F(GymnasiumTest, ConfigErrorsNameTheEnvAndWhatIsWrong) {
  EnvOptions o;
  o.python = RLSWARM_TEST_PYTHON;
  auto message = [&](const std::string& name) -> std::string {
    try {
      DescribeEnv(name, o);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string dict = message("gymnasium:rlswarm_test_envs:DictObs-v0");
  EXPECT_NE(dict.find("DictObs-v0"), std::string::npos) << dict;
  EXPECT_NE(dict.find("Dict"), std::string::npos) << dict;
  EXPECT_NE(dict.find("not supported"), std::string::npos) << dict;
  const std::string module = message("gymnasium:no_such_module_x:Env-v0");
  EXPECT_NE(module.find("cannot import module 'no_such_module_x'"), std::string::npos) << module;
  const std::string unknown = message("gymnasium:NoSuchEnv-v9");
  EXPECT_NE(unknown.find("NoSuchEnv-v9"), std::string::npos) << unknown;
  o.python = "/nonexistent/python";
  const std::string python = message("gymnasium:CartPole-v1");
  EXPECT_NE(python.find("/nonexistent/python"), std::string::npos) << python;
}

// Each fault surfaces as an EnvFailure naming what went wrong, and a
// restarted worker steps on.
TEST_F(GymnasiumTest, AFaultyEnvFailsLoudlyAndARestartRecovers) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> faults = {
      {"raise", {"RuntimeError", "scripted failure", "Python traceback"}},
      {"nan", {"observation", "step 3", "NaN", "vector index 0"}},
      {"shape", {"step 3"}},
      {"reward", {"reward", "step 3"}},
      {"abort", {"signal 6", "SIGABRT"}},
  };
  for (const auto& [fault, expected] : faults) {
    SCOPED_TRACE(fault);
    VectorEnv env(kFaulty,
                  Options(1, std::nullopt, R"({"fault": ")" + fault + R"(", "at_step": 3})"));
    env.Reset(0);
    const std::vector<std::int64_t> action = {1};
    env.Step(action);
    env.Step(action);
    try {
      env.Step(action);
      ADD_FAILURE() << "no error";
    } catch (const EnvFailure& e) {
      for (const auto& part : expected) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << part << ": " << e.what();
      }
    }
    const std::int64_t before = env.worker_pid();
    env.Restart(1);
    EXPECT_NE(env.worker_pid(), before);
    env.Step(action);
    env.Step(action);
    EXPECT_EQ(env.rewards()[0], 1.0f);
  }
}

TEST_F(GymnasiumTest, RequestStopCutsAHungStep) {
  VectorEnv env(kFaulty, Options(1, std::nullopt, R"({"fault": "sleep", "at_step": 1})"));
  env.Reset(0);
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    env.RequestStop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(env.Step(std::vector<std::int64_t>{0}), Cancelled);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

// Evaluation seeds every episode: the results do not depend on the number of
// envs, as for the built-in envs.
TEST_F(GymnasiumTest, PerEpisodeSeedingDoesNotDependOnTheNumberOfEnvs) {
  auto run = [&](std::int64_t num_envs) {
    VectorEnvOptions o = Options(num_envs);
    o.seeding = AutoResetSeeding::kSeedPerEpisode;
    VectorEnv env("gymnasium:CartPole-v1", o);
    EXPECT_EQ(env.autoreset(), AutoResetMode::kSameStep);
    // Episode k's actions depend only on (seed, k).
    RandomPolicy policy(env.spec(), num_envs, 3);
    std::vector<double> returns;
    for (const auto& e : RunEpisodes(env, policy, 6, 11)) returns.push_back(e.episode_return);
    return returns;
  };
  EXPECT_EQ(run(1), run(3));
}

// ale-py's own vector env has no disabled autoreset mode: per-episode
// seeding (what evaluations use) runs it in same_step mode and reseeds each
// finished env itself, and the episodes are still those of (seed, k) alone.
TEST_F(GymnasiumTest, PerEpisodeSeedingWorksWithAVectorEnvThatCannotDisableAutoreset) {
  auto run = [&](std::int64_t num_envs) {
    VectorEnvOptions o = Options(num_envs);
    o.env.vectorization_mode = "vector_entry_point";
    o.env.kwargs_json = R"({"repeat_action_probability": 0.25, "stack_num": 4})";
    o.seeding = AutoResetSeeding::kSeedPerEpisode;
    VectorEnv env("gymnasium:ALE/Pong-v5", o);
    EXPECT_EQ(env.autoreset(), AutoResetMode::kSameStep);
    RandomPolicy policy(env.spec(), num_envs, 5);
    std::vector<std::pair<double, std::int64_t>> episodes;
    for (const auto& e : RunEpisodes(env, policy, 3, 17)) {
      episodes.emplace_back(e.episode_return, e.length);
    }
    return episodes;
  };
  const auto one = run(1);
  EXPECT_EQ(one, run(2));
  for (const auto& [episode_return, length] : one) {
    EXPECT_LE(episode_return, -15);  // a random policy's Pong: -21 to about -18
    EXPECT_GT(length, 500);
  }
}

}  // namespace
}  // namespace rlswarm::envs
