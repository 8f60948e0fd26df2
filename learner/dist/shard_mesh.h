#pragma once

// The ranks of a sharded model as a 2-D mesh [replicas x shard group], as
// FSDP's HYBRID_SHARD sees its DeviceMesh: W = R x G ranks, rank r at shard
// index r % G in shard group r / G. Parameters, gradients and optimizer state
// are sharded within a shard group (G consecutive ranks: one node under
// torchrun, so the all-gathers and reduce-scatters stay on the node's fast
// links) and replicated across the R groups. The replica group of rank r is
// the R ranks with its shard index; they hold identical shards.
//
// The other strategies use the 1-D mesh: one shard group of all W ranks and
// no replica group.
//
// rendezvous.h builds a 2-D mesh (MakeShardMesh); this header only says what
// one is, so that ShardedModel does not depend on how groups are made.

#include <memory>
#include <vector>

#include "learner/dist/communicator.h"

namespace rlswarm::learner {

struct ShardMesh {
  // Every rank: the control plane (stop agreement, checkpoint barriers), the
  // direct path's gradient all-reduce, and ShardedModel::communicator(), so
  // checkpoints and publishing see global ranks.
  std::shared_ptr<Communicator> world;
  // This rank's shard group: all-gathers, reduce-scatters, the health
  // all-reduce. `world` itself on a 1-D mesh; a group-less world-1
  // Communicator when G = 1.
  std::shared_ptr<Communicator> shard;
  // This rank's replica group: the all-reduce of each unit's gradient shard.
  // Null on a 1-D mesh (one replica).
  std::shared_ptr<Communicator> replica;

  // One shard group of every rank (null `world`: a 1-rank world).
  static ShardMesh OneDim(std::shared_ptr<Communicator> world);

  bool two_dim() const { return static_cast<bool>(replica); }
  int shard_group_size() const { return shard ? shard->world_size() : 1; }
  int num_replicas() const { return replica ? replica->world_size() : 1; }
  // Throws InvalidArgument unless the planes tile the world as this header
  // says: shard group size x replicas = world size, the shard rank is the
  // world rank mod G and the replica rank the world rank div G.
  void Validate() const;
};

// Throws InvalidArgument (naming both numbers) unless shard_group_size >= 1
// and it divides world_size.
void CheckShardGroupSize(int world_size, int shard_group_size);

// The shard group size hybrid_shard uses: `configured` when > 0, else
// `local_world_size` (torchrun's LOCAL_WORLD_SIZE: the ranks of this node)
// when > 0, else the world size (rlswarm launch runs every rank on one
// host). Not checked: see CheckShardGroupSize.
int ResolveShardGroupSize(int configured, int local_world_size, int world_size);

// World ranks of `rank`'s shard group (G consecutive ranks) and of its
// replica group (every G-th rank from its shard index), ascending.
std::vector<int> ShardGroupRanks(int rank, int world_size, int shard_group_size);
std::vector<int> ReplicaGroupRanks(int rank, int world_size, int shard_group_size);

}  // namespace rlswarm::learner
