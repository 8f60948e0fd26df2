#include "learner/checkpoint/checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "common/testing/files.h"
#include "models/q_network.h"
#include "models/q_networks.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
namespace th = testing;

// A fresh directory per test, removed with everything in it.
struct TempDir : rlswarm::testing::TempDir {
  TempDir() : rlswarm::testing::TempDir("learner_ckpt") {}
};

double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return 1e300;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// Saved by 2 ranks after 5 steps; resumed at 1 and 3 ranks for 5 more steps,
// online and target parameters and Adam's state (hence the next steps) match
// the 2-rank run that went on without stopping.
TEST(ShardedCheckpointTest, SavedAtTwoRanksContinuesIdenticallyAtOneAndThreeRanks) {
  TempDir dir;
  for (const auto& e : th::RunWorkers("ckpt_save", 2, dir.path(), std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir.path() + "/rank0.err")
                              << th::ReadText(dir.path() + "/rank1.err");
  }
  const std::vector<double> online = th::ReadDoubles(dir.path() + "/ref.online.bin");
  const std::vector<double> target = th::ReadDoubles(dir.path() + "/ref.target.bin");
  for (int world : {1, 3}) {
    for (const auto& e :
         th::RunWorkers("ckpt_resume", world, dir.path(), std::chrono::seconds(60))) {
      ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir.path() + "/rank0.err");
    }
    const std::string prefix = dir.path() + "/w" + std::to_string(world);
    EXPECT_LT(MaxDiff(th::ReadDoubles(prefix + ".online.bin"), online), 1e-10) << world;
    EXPECT_LT(MaxDiff(th::ReadDoubles(prefix + ".target.bin"), target), 1e-10) << world;
    EXPECT_EQ(th::ReadText(prefix + ".step"), "10");
  }
}

// Each rank of 2 (full_shard) publishes only its part; the parts of one
// version merge into exactly the full parameters, which rank 0's full-mode
// publisher sends as one blob.
TEST(WeightsPublishingTest, PerRankPartsReassembleToTheFullParameters) {
  TempDir dir;
  for (const auto& e : th::RunWorkers("publish", 2, dir.path(), std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir.path() + "/rank0.err");
  }
  EXPECT_EQ(th::ReadText(dir.path() + "/publish.txt"), "1 1 2");
}

ShardedModelOptions WithOptimizer(OptimizerOptions optimizer) {
  ShardedModelOptions o;
  o.optimizer = optimizer;
  return o;
}

struct World1 {
  explicit World1(OptimizerOptions optimizer = {}) : model{spec, WithOptimizer(optimizer), comm} {}
  models::ModelSpec spec = models::MakeMlpSpec(models::MlpOptions{});
  std::shared_ptr<Communicator> comm = std::make_shared<Communicator>();
  ShardedModel model;
  std::unique_ptr<ShardedModel> target = model.MakeTarget();

  void Train(int steps) {
    for (int i = 0; i < steps; ++i) {
      model.ZeroGrad();
      model.Forward(at::randn({8, 4})).pow(2).mean().backward();
      model.Step();
    }
  }
};

TEST(ShardedCheckpointTest, EvaluationLoadsTheOnlineParametersWithoutAProcessGroup) {
  TempDir dir;
  World1 w;
  w.Train(3);
  SaveCheckpoint(dir.path(), w.model, w.target.get(), {3, 0});
  const models::NamedTensors loaded = LoadCheckpointParameters(dir.path());
  const models::NamedTensors full = w.model.FullParameters();
  ASSERT_EQ(loaded.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(loaded[i].first, full[i].first);
    EXPECT_TRUE(at::equal(loaded[i].second, full[i].second));
  }
  models::QNetwork net(w.spec, /*seed=*/99);
  net.LoadParameters(loaded);  // the unsharded model evaluation runs
  EXPECT_THROW(LoadCheckpointParameters(dir.path() + "/nothing"), NotFound);
}

// What a user reads when `rlswarm evaluate --checkpoint DIR` finds nothing:
// a wrong path and a broken save say different things.
TEST(ShardedCheckpointTest, NoLoadableCheckpointSaysWhy) {
  TempDir dir;
  const auto message = [](const std::string& path) {
    try {
      LoadCheckpointParameters(path);
    } catch (const NotFound& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_NE(message(dir.path() + "/nothing").find("does not exist"), std::string::npos);
  EXPECT_NE(message(dir.path()).find("neither a manifest.json nor update-N"), std::string::npos);
  fs::create_directories(dir.path() + "/update-000000000010");
  std::ofstream(dir.path() + "/update-000000000010/shard-0.bin") << "garbage";
  const std::string broken = message(dir.path());
  EXPECT_NE(broken.find("update-000000000010: checkpoint: no manifest"), std::string::npos)
      << broken;
}

TEST(ShardedCheckpointTest, CorruptOrIncompleteCheckpointsAreSkipped) {
  TempDir dir;
  World1 w;
  w.Train(1);
  SaveCheckpoint(dir.path(), w.model, w.target.get(), {1, 0}, /*keep=*/0);
  const models::NamedTensors at1 = w.model.FullParameters();
  w.Train(1);
  const std::string second = SaveCheckpoint(dir.path(), w.model, w.target.get(), {2, 0}, 0);
  w.Train(1);
  const std::string third = SaveCheckpoint(dir.path(), w.model, w.target.get(), {3, 0}, 0);
  ASSERT_EQ(FindLatestCheckpoint(dir.path()), third);

  // A flipped byte in the data: the CRC catches it.
  {
    std::fstream f(third + "/shard-0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(17);
    const char byte = static_cast<char>(f.get());
    f.seekp(17);
    f.put(static_cast<char>(byte ^ 0x5a));  // differs whatever the byte was
  }
  ASSERT_TRUE(ValidateCheckpoint(third).has_value());
  EXPECT_THROW(ReadCheckpointSections(third, nullptr), DataLoss);
  // A save that died before its manifest.
  fs::remove(second + "/manifest.json");
  EXPECT_EQ(FindLatestCheckpoint(dir.path()), dir.path() + "/update-000000000001");

  World1 fresh;
  EXPECT_EQ(LoadCheckpoint(*FindLatestCheckpoint(dir.path()), fresh.model, fresh.target.get())
                .update_count,
            1);
  const models::NamedTensors loaded = fresh.model.FullParameters();
  for (size_t i = 0; i < at1.size(); ++i) EXPECT_TRUE(at::equal(loaded[i].second, at1[i].second));
  EXPECT_EQ(fresh.model.optimizer().step(), 1);
}

// Centered RMSprop's gradient average is checkpointed and restored; a
// checkpoint of the other RMSprop variant is refused with the state's name
// and the key to look at, in either direction.
TEST(ShardedCheckpointTest, CenteredRmsPropResumesExactlyAndTheOtherVariantIsRefused) {
  TempDir dir;
  const OptimizerOptions centered{
      .kind = OptimizerKind::kRmsProp, .lr = 1e-3, .alpha = 0.95, .eps = 0.01, .centered = true};
  OptimizerOptions uncentered = centered;
  uncentered.centered = false;
  World1 w(centered);
  w.Train(2);
  const std::string saved = SaveCheckpoint(dir.path() + "/c", w.model, w.target.get(), {2, 0}, 0);
  World1 resumed(centered);
  LoadCheckpoint(saved, resumed.model, resumed.target.get());
  at::manual_seed(7);
  w.Train(1);
  at::manual_seed(7);
  resumed.Train(1);
  const models::NamedTensors a = w.model.FullParameters(), b = resumed.model.FullParameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i].second, b[i].second));

  auto error_loading = [](const std::string& from, const OptimizerOptions& into) {
    World1 other(into);
    try {
      LoadCheckpoint(from, other.model, other.target.get());
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  const std::string into_uncentered = error_loading(saved, uncentered);
  EXPECT_NE(into_uncentered.find("'grad_avg'"), std::string::npos) << into_uncentered;
  EXPECT_NE(into_uncentered.find("rmsprop_centered"), std::string::npos) << into_uncentered;
  World1 plain(uncentered);
  plain.Train(1);
  const std::string plain_saved =
      SaveCheckpoint(dir.path() + "/u", plain.model, plain.target.get(), {1, 0}, 0);
  const std::string into_centered = error_loading(plain_saved, centered);
  EXPECT_NE(into_centered.find("'grad_avg'"), std::string::npos) << into_centered;
}

TEST(ShardedCheckpointTest, OnlyTheNewestKeepCheckpointsRemain) {
  TempDir dir;
  World1 w;
  for (int u = 1; u <= 4; ++u) SaveCheckpoint(dir.path(), w.model, w.target.get(), {u, 0}, 2);
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) count += e.is_directory();
  EXPECT_EQ(count, 2);
  EXPECT_EQ(FindLatestCheckpoint(dir.path()), dir.path() + "/update-000000000004");
}

}  // namespace
}  // namespace rlswarm::learner
