#include "learner/dist/shard_mesh.h"

#include <string>

#include "common/errors.h"

namespace rlswarm::learner {

ShardMesh ShardMesh::OneDim(std::shared_ptr<Communicator> world) {
  if (!world) world = std::make_shared<Communicator>();
  ShardMesh mesh;
  mesh.world = world;
  mesh.shard = std::move(world);
  return mesh;
}

void ShardMesh::Validate() const {
  if (!world || !shard) throw InvalidArgument("shard mesh: no world or shard communicator");
  const int w = world->world_size();
  const int g = shard_group_size();
  const int r = num_replicas();
  if (g * r != w || shard->rank() != world->rank() % g ||
      (replica && replica->rank() != world->rank() / g)) {
    throw InvalidArgument("shard mesh: rank " + std::to_string(world->rank()) + "/" +
                          std::to_string(w) + " is shard " + std::to_string(shard->rank()) + "/" +
                          std::to_string(g) + ", replica " +
                          std::to_string(replica ? replica->rank() : 0) + "/" + std::to_string(r) +
                          ": the planes do not tile the world");
  }
}

void CheckShardGroupSize(int world_size, int shard_group_size) {
  if (shard_group_size < 1 || world_size % shard_group_size != 0) {
    throw InvalidArgument("shard group size " + std::to_string(shard_group_size) +
                          " does not divide the world size " + std::to_string(world_size) +
                          " (hybrid_shard needs world size = replicas x shard group size)");
  }
}

int ResolveShardGroupSize(int configured, int local_world_size, int world_size) {
  if (configured > 0) return configured;
  if (local_world_size > 0) return local_world_size;
  return world_size;
}

std::vector<int> ShardGroupRanks(int rank, int world_size, int shard_group_size) {
  CheckShardGroupSize(world_size, shard_group_size);
  std::vector<int> ranks;
  const int first = rank / shard_group_size * shard_group_size;
  for (int i = 0; i < shard_group_size; ++i) ranks.push_back(first + i);
  return ranks;
}

std::vector<int> ReplicaGroupRanks(int rank, int world_size, int shard_group_size) {
  CheckShardGroupSize(world_size, shard_group_size);
  std::vector<int> ranks;
  for (int r = rank % shard_group_size; r < world_size; r += shard_group_size) ranks.push_back(r);
  return ranks;
}

}  // namespace rlswarm::learner
