#include "learner/algorithms/td3_trainer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "learner/testing/td3_case.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = testing;

double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

std::unique_ptr<Td3Trainer> WorldOneTrainer() {
  return th::MakeTd3Trainer(ShardMesh::OneDim(std::make_shared<Communicator>()));
}

// The policy and both targets move only every policy_delay (2) updates; the
// critics move every update.
TEST(Td3TrainerTest, ThePolicyAndTheTargetsMoveEveryPolicyDelayUpdates) {
  std::unique_ptr<Td3Trainer> t = WorldOneTrainer();
  auto snapshot = [&] { return th::Td3FullParameters(*t); };
  const auto before = snapshot();
  t->TrainOn(th::Td3GlobalBatch(1), 1);
  EXPECT_FALSE(t->last_step().policy_updated);
  const auto after_one = snapshot();
  EXPECT_EQ(th::Flatten(after_one[0]), th::Flatten(before[0]));  // actor
  EXPECT_NE(th::Flatten(after_one[1]), th::Flatten(before[1]));  // critic
  EXPECT_EQ(th::Flatten(after_one[2]), th::Flatten(before[2]));  // actor target
  EXPECT_EQ(th::Flatten(after_one[3]), th::Flatten(before[3]));  // critic target
  t->TrainOn(th::Td3GlobalBatch(2), 2);
  EXPECT_TRUE(t->last_step().policy_updated);
  const auto after_two = snapshot();
  for (int i = 0; i < 4; ++i) EXPECT_NE(th::Flatten(after_two[i]), th::Flatten(after_one[i])) << i;
}

// On one fixed batch the critics' TD error falls, and the policy climbs the
// first critic: the trained critic values the trained policy's actions above
// those of the initial policy.
TEST(Td3TrainerTest, OnFixedTransitionsTheTdErrorFallsAndThePolicyClimbsTheCritic) {
  std::unique_ptr<Td3Trainer> t = WorldOneTrainer();
  std::unique_ptr<Td3Trainer> initial = WorldOneTrainer();  // the same seeds, untrained
  // Discount 0: the critics regress on the reward alone, a fixed target
  // (with bootstrapping the targets move as the critics do).
  Td3Batch batch = th::Td3GlobalBatch(1);
  batch.discount = at::zeros_like(batch.discount);
  t->TrainOn(batch, 1);
  const double first_td = t->last_step().mean_abs_td;
  for (int u = 2; u <= 400; ++u) t->TrainOn(batch, u);
  EXPECT_LT(t->last_step().mean_abs_td, 0.3 * first_td) << first_td;
  at::NoGradGuard no_grad;
  auto q1 = [&](Td3Trainer& policy) {
    const at::Tensor a = policy.actor().Forward(batch.observation);
    return t->critic()
        .Forward(at::cat({batch.observation, a}, 1))
        .select(1, 0)
        .mean()
        .item<double>();
  };
  const double trained = q1(*t), untrained = q1(*initial);
  EXPECT_GT(trained, untrained + 0.05) << "trained " << trained << ", initial " << untrained;
}

// full_shard at world 2 (real Gloo group, one process per rank) trains to
// the parameters of the world-1 run, all four networks, in float64.
TEST(Td3TrainerTest, FullShardAtWorldTwoMatchesWorldOne) {
  std::unique_ptr<Td3Trainer> reference = WorldOneTrainer();
  th::TrainTd3(*reference, 0, 1);
  const auto expected = th::Td3FullParameters(*reference);
  const std::string dir = th::RunWorkersOnce("td3", 2, std::chrono::seconds(60));
  const std::vector<int> codes = th::ExitCodes(dir);
  for (size_t r = 0; r < codes.size(); ++r) {
    ASSERT_EQ(codes[r], 0) << th::ReadText(dir + "/rank" + std::to_string(r) + ".err");
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string name = th::Td3NetworkNames()[i];
    const std::vector<double> sharded = th::ReadDoubles(dir + "/td3_" + name + ".bin");
    const std::vector<double> plain = th::Flatten(expected[i]);
    ASSERT_FALSE(plain.empty());
    EXPECT_LT(MaxAbsDiff(sharded, plain), 1e-10) << name;
  }
}

}  // namespace
}  // namespace rlswarm::learner
