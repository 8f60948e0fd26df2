// A checkpoint written by either LibTorch build (Debian's 1.13, PyPI's 2.x)
// loads in the other. Each build wrote a fixture once with
// CheckpointAcrossBuildsTest.DISABLED_WriteFixture (see tests/data/README.md):
// a small float64 model (with padding) after three Adam steps and Polyak
// target updates, with the parameters the writer saw and its next step.
// Every build loads every fixture, compares the online and target parameters
// exactly and checks the Adam step, then takes one more step, which matches
// the writer's (so the optimizer state loaded too). Resharding across world
// sizes is checkpoint_test.cc's.

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "learner/checkpoint/checkpoint.h"
#include "learner/testing/harness.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
namespace th = testing;

const fs::path kFixtures = fs::path(RLSWARM_SOURCE_DIR) / "tests" / "data" / "checkpoints";

ShardedModelOptions FixtureOptions() {
  ShardedModelOptions o;
  o.seed = 11;
  o.sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
  return o;
}

void TrainThreeSteps(ShardedModel& model, ShardedModel& target, int rank, int world) {
  const models::ModelSpec& spec = model.spec();
  const int64_t share = th::kGlobalBatch / world;
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = th::GlobalBatch(spec, step);
    at::Tensor q = model.Forward(x.narrow(0, rank * share, share));
    model.ZeroGrad();
    (q - y.narrow(0, rank * share, share)).pow(2).mean().backward();
    model.Step();
    target.PolyakUpdate(model, 0.5);
  }
}

TEST(CheckpointAcrossBuildsTest, FixturesOfBothBuildsLoadHere) {
  ASSERT_TRUE(fs::is_directory(kFixtures)) << kFixtures;
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kFixtures)) {
    if (!entry.is_directory()) continue;
    SCOPED_TRACE(entry.path().filename().string());
    const fs::path root = entry.path();
    std::optional<std::string> dir = FindLatestCheckpoint((root / "learner").string());
    ASSERT_TRUE(dir) << "no valid checkpoint under " << root;
    ShardedModel online(th::CaseSpec("mlp"), FixtureOptions(), nullptr);
    std::unique_ptr<ShardedModel> target = online.MakeTarget();
    const CheckpointProgress progress = LoadCheckpoint(*dir, online, target.get());
    EXPECT_EQ(progress.update_count, 3);
    EXPECT_EQ(online.optimizer().step(), 3);
    EXPECT_EQ(th::Flatten(online.FullParameters()),
              th::ReadDoubles((root / "online.bin").string()));
    EXPECT_EQ(th::Flatten(target->FullParameters()),
              th::ReadDoubles((root / "target.bin").string()));
    // The Adam moments came along: one more step from the loaded state is
    // one more step of the run that wrote it (to rounding across builds).
    auto [x, y] = th::GlobalBatch(online.spec(), 3);
    online.ZeroGrad();
    (online.Forward(x) - y).pow(2).mean().backward();
    online.Step();
    const std::vector<double> next = th::Flatten(online.FullParameters());
    const std::vector<double> expected = th::ReadDoubles((root / "online_step4.bin").string());
    ASSERT_EQ(next.size(), expected.size());
    for (size_t i = 0; i < next.size(); ++i) EXPECT_NEAR(next[i], expected[i], 1e-12) << i;
    ++loaded;
  }
  EXPECT_GE(loaded, 2) << "expected a fixture from each build under " << kFixtures;
}

// Writes this build's fixture into $RLSWARM_FIXTURE_DIR (run by hand, once
// per build: see tests/data/README.md).
TEST(CheckpointAcrossBuildsTest, DISABLED_WriteFixture) {
  const char* out = std::getenv("RLSWARM_FIXTURE_DIR");
  ASSERT_NE(out, nullptr) << "set RLSWARM_FIXTURE_DIR";
  const fs::path root(out);
  fs::create_directories(root);
  ShardedModel online(th::CaseSpec("mlp"), FixtureOptions(), nullptr);
  std::unique_ptr<ShardedModel> target = online.MakeTarget();
  TrainThreeSteps(online, *target, 0, 1);
  SaveCheckpoint((root / "learner").string(), online, target.get(), {3, 11}, 1);
  th::WriteDoubles((root / "online.bin").string(), th::Flatten(online.FullParameters()));
  th::WriteDoubles((root / "target.bin").string(), th::Flatten(target->FullParameters()));
  auto [x, y] = th::GlobalBatch(online.spec(), 3);
  online.ZeroGrad();
  (online.Forward(x) - y).pow(2).mean().backward();
  online.Step();
  th::WriteDoubles((root / "online_step4.bin").string(), th::Flatten(online.FullParameters()));
  std::ofstream(root / "WRITTEN_BY") << TorchBuildDescription() << "\n";
}

}  // namespace
}  // namespace rlswarm::learner
