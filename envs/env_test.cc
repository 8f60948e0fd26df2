// The Env base class contract (input checks, episode clock, seeding), checked
// on a hand-written counting env and on the real CartPole.

#include "envs/env.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "envs/registry.h"

namespace rlswarm::envs {
namespace {

// Observation = [step count, last action, a random draw from reset];
// terminates when the action is 2.
class CountingEnv final : public Env {
 public:
  explicit CountingEnv(std::int64_t limit) : Env(MakeSpec(limit)) {}

 private:
  static EnvSpec MakeSpec(std::int64_t limit) {
    EnvSpec s;
    s.name = "Counting";
    s.observation = {{3}, DType::kFloat32, {-1e9}, {1e9}};
    s.action = {ActionKind::kDiscrete, 3, {{}, DType::kInt64, {0}, {2}}};
    s.max_episode_steps = limit;
    return s;
  }
  using Env::Advance;

  void ResetState() override {
    count_ = 0;
    last_ = -1;
    draw_ = static_cast<float>(rng().Uniform01());
  }
  Transition Advance(std::int64_t action) override {
    ++count_;
    last_ = static_cast<float>(action);
    return {1.0f, action == 2};
  }
  void WriteObservation(std::byte* out) const override {
    const float obs[3] = {static_cast<float>(count_), last_, draw_};
    std::memcpy(out, obs, sizeof(obs));
  }
  int count_ = 0;
  float last_ = -1;
  float draw_ = 0;
};

std::span<std::byte> Bytes(std::array<float, 3>& a) { return std::as_writable_bytes(std::span(a)); }

TEST(EnvTest, StepBeforeResetIsAFailedPrecondition) {
  CountingEnv env(0);
  std::array<float, 3> obs{};
  EXPECT_THROW(env.Step(0, Bytes(obs)), FailedPrecondition);
}

TEST(EnvTest, StepAfterTerminationNeedsReset) {
  CountingEnv env(0);
  std::array<float, 3> obs{};
  env.Reset(1, Bytes(obs));
  const StepResult r = env.Step(2, Bytes(obs));
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_TRUE(env.needs_reset());
  EXPECT_THROW(env.Step(0, Bytes(obs)), FailedPrecondition);
  env.Reset(std::nullopt, Bytes(obs));
  EXPECT_NO_THROW(env.Step(0, Bytes(obs)));
}

TEST(EnvTest, TruncatesExactlyAtTheTimeLimitEvenWhenAlsoTerminated) {
  CountingEnv env(3);
  std::array<float, 3> obs{};
  env.Reset(1, Bytes(obs));
  EXPECT_FALSE(env.Step(0, Bytes(obs)).truncated);
  EXPECT_FALSE(env.Step(0, Bytes(obs)).truncated);
  const StepResult last = env.Step(2, Bytes(obs));
  EXPECT_TRUE(last.truncated);
  EXPECT_TRUE(last.terminated);
  EXPECT_EQ(obs[0], 3.0f);  // the final observation is written
  EXPECT_EQ(env.elapsed_steps(), 3);
}

TEST(EnvTest, BadActionsThrowAndChangeNothing) {
  CountingEnv env(0);
  std::array<float, 3> obs{};
  env.Reset(1, Bytes(obs));
  env.Step(1, Bytes(obs));
  const auto before = obs;
  EXPECT_THROW(env.Step(3, Bytes(obs)), InvalidArgument);
  EXPECT_THROW(env.Step(-1, Bytes(obs)), InvalidArgument);
  const float continuous[1] = {0.5f};
  EXPECT_THROW(env.Step(std::span<const float>(continuous), Bytes(obs)), InvalidArgument);
  std::array<std::byte, 4> small{};
  EXPECT_THROW(env.Step(0, small), InvalidArgument);
  EXPECT_EQ(obs, before);
  EXPECT_EQ(env.elapsed_steps(), 1);
  env.Observe(Bytes(obs));
  EXPECT_EQ(obs, before);
}

TEST(EnvTest, ResetWithSeedReplaysAndWithoutSeedContinues) {
  CountingEnv env(0);
  std::array<float, 3> a{}, b{}, c{};
  env.Reset(7, Bytes(a));
  env.Reset(std::nullopt, Bytes(b));
  env.Reset(7, Bytes(c));
  EXPECT_EQ(a[2], c[2]);
  EXPECT_NE(a[2], b[2]);
}

TEST(EnvTest, CartPoleRejectsAContinuousActionAndAnEndedEpisode) {
  auto env = MakeEnv("CartPole-v1");
  std::array<float, 4> obs{};
  auto bytes = std::as_writable_bytes(std::span(obs));
  env->Reset(0, bytes);
  const float continuous[1] = {1.0f};
  EXPECT_THROW(env->Step(std::span<const float>(continuous), bytes), InvalidArgument);
  EXPECT_THROW(env->Step(2, bytes), InvalidArgument);
  StepResult r;
  while (!(r = env->Step(1, bytes)).terminated) {
  }
  EXPECT_THROW(env->Step(1, bytes), FailedPrecondition);
}

TEST(EnvTest, PendulumRejectsNanAndOutOfBoundActions) {
  auto env = MakeEnv("Pendulum-v1");
  std::array<float, 3> obs{};
  auto bytes = std::as_writable_bytes(std::span(obs));
  env->Reset(0, bytes);
  for (float bad : {std::nanf(""), 2.5f, -2.01f}) {
    const float action[1] = {bad};
    EXPECT_THROW(env->Step(std::span<const float>(action), bytes), InvalidArgument) << bad;
  }
  const float two[2] = {0.0f, 0.0f};
  EXPECT_THROW(env->Step(std::span<const float>(two), bytes), InvalidArgument);
  EXPECT_THROW(env->Step(0, bytes), InvalidArgument);
  EXPECT_EQ(env->elapsed_steps(), 0);
}

}  // namespace
}  // namespace rlswarm::envs
