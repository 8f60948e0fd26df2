// hybrid_shard on real Gloo groups: 4 ranks as 2 replicas x shard groups of
// 2 (and the edge cases, groups of 1 = no_shard and of 4 = full_shard), 6
// ranks as 3 x 2 and 2 x 3. The ranks train the cases of
// testing::HybridRuns once per world size (testing/hybrid_scenario.cc); the
// tests compare with 1-process plain LibTorch training in float64 on the
// same global batches, as ShardedTrainingTest does for the 1-D strategies.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "learner/checkpoint/checkpoint_reader.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;
using th::MaxAbsDiff;

// "target_ok shard_index shard_count rejects_full_shard checkpoint_ok" of
// one rank (see hybrid_scenario.cc).
struct RankReport {
  int target_ok = 0;
  int shard_index = -1;
  int shard_count = -1;
  int rejects_full_shard = 0;
  int checkpoint_ok = 0;
};

class HybridTrainingTest : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }

  const std::string& Dir() {
    static std::map<int, std::string> dirs;
    auto it = dirs.find(world());
    if (it != dirs.end()) return it->second;
    const std::string dir = th::RunWorkersOnce("hybrid", world(), std::chrono::seconds(90));
    const std::vector<int> codes = th::ExitCodes(dir);
    EXPECT_EQ(static_cast<int>(codes.size()), world());
    for (size_t r = 0; r < codes.size(); ++r) {
      EXPECT_EQ(codes[r], 0) << "rank " << r << ": "
                             << th::ReadText(dir + "/rank" + std::to_string(r) + ".err");
    }
    return dirs.emplace(world(), dir).first->second;
  }

  std::string Base(const std::string& name, int g) {
    return Dir() + "/" + name + "_g" + std::to_string(g);
  }
  std::string Rank(const std::string& name, int g, int r) {
    return Base(name, g) + ".rank" + std::to_string(r);
  }

  RankReport Report(const std::string& name, int g, int r) {
    RankReport rep;
    std::ifstream f(Rank(name, g, r) + ".txt");
    f >> rep.target_ok >> rep.shard_index >> rep.shard_count >> rep.rejects_full_shard >>
        rep.checkpoint_ok;
    return rep;
  }
};

TEST_P(HybridTrainingTest, MatchesOneProcessTrainingOnTheGlobalBatch) {
  for (const th::HybridRun& run : th::HybridRuns(world())) {
    for (const std::string& name : run.cases) {
      const double diff = MaxAbsDiff(th::ReadDoubles(Base(name, run.shard_group_size) + ".bin"),
                                     th::Flatten(th::PlainTrain(th::HybridCase(name))));
      std::ostringstream text;
      text << diff;
      RecordProperty(name + "_g" + std::to_string(run.shard_group_size), text.str());
      EXPECT_LT(diff, 1e-10) << name << " in shard groups of " << run.shard_group_size;
    }
  }
}

// Step()'s health all-reduce runs over the shard group only: every rank
// reports the norm of the whole model's gradient of the global batch, as a
// 1-rank model computes it, not sqrt(replicas) times it.
TEST_P(HybridTrainingTest, GradNormIsTheGlobalNormOnEveryRank) {
  for (const th::HybridRun& run : th::HybridRuns(world())) {
    for (const std::string& name : run.cases) {
      const th::TrainCase c = th::HybridCase(name);
      const models::ModelSpec spec = th::CaseSpec(c.model);
      ShardedModel one(spec, c.options, nullptr);
      const std::vector<double> expected = th::TrainAndRecordNorms(one, spec, 0, 1);
      for (int r = 0; r < world(); ++r) {
        const std::vector<double> seen =
            th::ReadDoubles(Rank(name, run.shard_group_size, r) + ".norms");
        EXPECT_LT(MaxAbsDiff(seen, expected), 1e-10)
            << name << " g" << run.shard_group_size << " rank " << r;
      }
    }
  }
}

// The ranks of a replica group (world ranks r, r + G, ...) hold the same
// shard, bit for bit, parameters and optimizer state alike; the shard index
// is the rank within the shard group.
TEST_P(HybridTrainingTest, ReplicasHoldIdenticalShards) {
  for (const th::HybridRun& run : th::HybridRuns(world())) {
    const int g = run.shard_group_size;
    for (const std::string& name : run.cases) {
      for (int r = 0; r < world(); ++r) {
        const std::vector<double> mine = th::ReadDoubles(Rank(name, g, r) + ".state");
        ASSERT_FALSE(mine.empty()) << name << " g" << g << " rank " << r;
        EXPECT_EQ(mine, th::ReadDoubles(Rank(name, g, r % g) + ".state"))
            << name << " g" << g << ": rank " << r << " and its replica in the first group";
        const RankReport rep = Report(name, g, r);
        EXPECT_EQ(rep.shard_index, g == 1 ? 0 : r % g) << name << " rank " << r;
        EXPECT_EQ(rep.shard_count, g) << name << " rank " << r;
      }
    }
  }
}

TEST_P(HybridTrainingTest, TargetNetworkComputesWhatTheOnlineModelComputes) {
  for (const th::HybridRun& run : th::HybridRuns(world())) {
    for (const std::string& name : run.cases) {
      for (int r = 0; r < world(); ++r) {
        const RankReport rep = Report(name, run.shard_group_size, r);
        EXPECT_EQ(rep.target_ok, 1) << name << " g" << run.shard_group_size << " rank " << r;
        EXPECT_EQ(rep.rejects_full_shard, 1) << "a full_shard model on a 2-D mesh must be refused";
      }
    }
  }
}

// Shard s of the checkpoint comes from world rank s (the first shard group);
// every rank, replicas included, loads its own shard back, and evaluation
// reads the trained parameters without a process group.
TEST_P(HybridTrainingTest, CheckpointLoadsBackOnEveryRankAndWithoutAGroup) {
  int checked = 0;
  for (const th::HybridRun& run : th::HybridRuns(world())) {
    if (run.checkpointed.empty()) continue;
    const int g = run.shard_group_size;
    for (int r = 0; r < world(); ++r) {
      EXPECT_EQ(Report(run.checkpointed, g, r).checkpoint_ok, 1) << "rank " << r;
    }
    const std::string root = Dir() + "/ckpt_g" + std::to_string(g);
    const std::optional<std::string> dir = FindLatestCheckpoint(root);
    ASSERT_TRUE(dir) << root;
    const CheckpointManifest m = ReadCheckpointManifest(*dir);
    EXPECT_EQ(m.world_size, world());
    EXPECT_EQ(m.shard_count, g);
    EXPECT_EQ(m.strategy, "hybrid_shard");
    EXPECT_LT(MaxAbsDiff(th::Flatten(LoadCheckpointParameters(*dir)),
                         th::Flatten(th::PlainTrain(th::HybridCase(run.checkpointed)))),
              1e-10);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Worlds, HybridTrainingTest, ::testing::Values(4, 6),
                         [](const auto& param_info) {
                           return "world" + std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace rlswarm::learner
