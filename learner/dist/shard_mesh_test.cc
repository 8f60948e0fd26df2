// The 2-D mesh's arithmetic and its refusals, without a process group
// (hybrid_training_test.cc trains on real ones).

#include "learner/dist/shard_mesh.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "learner/dist/rendezvous.h"
#include "learner/fsdp/sharded_model.h"
#include "learner/testing/harness.h"

namespace rlswarm::learner {
namespace {

TEST(ShardMeshTest, ShardGroupSizeMustDivideTheWorld) {
  for (int g : {1, 2, 4}) EXPECT_NO_THROW(CheckShardGroupSize(4, g)) << g;
  for (int g : {0, -1, 3, 5, 8}) EXPECT_THROW(CheckShardGroupSize(4, g), InvalidArgument) << g;
  EXPECT_THROW(CheckShardGroupSize(6, 4), InvalidArgument);
  try {
    CheckShardGroupSize(6, 4);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("4 does not divide the world size 6"), std::string::npos)
        << e.what();
  }
}

TEST(ShardMeshTest, DefaultShardGroupIsTheNodeThenTheWorld) {
  EXPECT_EQ(ResolveShardGroupSize(3, 2, 6), 3);  // configured
  EXPECT_EQ(ResolveShardGroupSize(0, 2, 6), 2);  // LOCAL_WORLD_SIZE
  EXPECT_EQ(ResolveShardGroupSize(0, 0, 6), 6);  // unknown: the world (full_shard)
}

TEST(ShardMeshTest, GroupsAreConsecutiveRanksAndTheirReplicasStrided) {
  EXPECT_EQ(ShardGroupRanks(4, 6, 2), (std::vector<int>{4, 5}));
  EXPECT_EQ(ShardGroupRanks(4, 6, 3), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(ReplicaGroupRanks(4, 6, 2), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(ReplicaGroupRanks(4, 6, 3), (std::vector<int>{1, 4}));
  EXPECT_EQ(ReplicaGroupRanks(1, 4, 4), (std::vector<int>{1}));
  EXPECT_THROW(ShardGroupRanks(0, 4, 3), InvalidArgument);
}

// The size is checked before any group is built (or the store touched), so
// every rank fails the same way instead of waiting for a group that cannot
// form.
TEST(ShardMeshTest, MakeShardMeshRejectsABadSizeBeforeBuildingGroups) {
  ProcessGroupHandle world;  // no store: touching it would crash
  world.rank = 1;
  world.world_size = 4;
  EXPECT_THROW(MakeShardMesh(world, 3), InvalidArgument);
  EXPECT_THROW(MakeShardMesh(world, 0), InvalidArgument);
}

TEST(ShardMeshTest, OneRankHybridIsTheDirectPath) {
  ShardedModelOptions options;
  options.sharding.strategy = ShardingStrategy::kHybridShard;
  ShardedModel model(testing::CaseSpec("mlp"), options, ShardMesh::OneDim(nullptr));
  EXPECT_TRUE(model.direct());
  EXPECT_EQ(model.shard_index(), 0);
  EXPECT_EQ(model.shard_count(), 1);
  EXPECT_FALSE(model.mesh().two_dim());
}

TEST(ShardMeshTest, HybridShardIsAStrategyName) {
  EXPECT_EQ(ParseShardingStrategy("hybrid_shard"), ShardingStrategy::kHybridShard);
  EXPECT_EQ(ShardingStrategyName(ShardingStrategy::kHybridShard), "hybrid_shard");
  EXPECT_TRUE(ReshardsAfterForward(ShardingStrategy::kHybridShard));
  EXPECT_FALSE(ReshardsAfterForward(ShardingStrategy::kShardGradOp));
}

}  // namespace
}  // namespace rlswarm::learner
