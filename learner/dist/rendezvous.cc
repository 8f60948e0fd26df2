#include "learner/dist/rendezvous.h"

#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <vector>

#include "common/errors.h"
#include "learner/runtime/collective_errors.h"

namespace rlswarm::learner {

void RendezvousOptions::Validate() const {
  if (world_size < 1) throw InvalidArgument("rendezvous: world_size must be >= 1");
  if (rank < 0 || rank >= world_size) {
    throw InvalidArgument("rendezvous: rank " + std::to_string(rank) + " outside [0, " +
                          std::to_string(world_size) + ")");
  }
  if (local_rank < 0) throw InvalidArgument("rendezvous: local_rank must be >= 0");
  if (local_world_size < 0) throw InvalidArgument("rendezvous: local_world_size must be >= 0");
  if (timeout.count() <= 0) throw InvalidArgument("rendezvous: timeout must be > 0");
  if (master_addr.empty()) throw InvalidArgument("rendezvous: master_addr is empty");
  if (master_port == 0 && !(host_store && rank == 0)) {
    throw InvalidArgument("rendezvous: master_port 0 only works for the rank hosting the store");
  }
  if (backend == Backend::kNccl && !BuiltWithCuda()) {
    throw InvalidArgument("rendezvous: NCCL needs a CUDA build of rlswarm (this one is " +
                          TorchBuildDescription() + "): scripts/build.sh --torch=pypi");
  }
}

std::string_view BackendName(Backend backend) {
  return backend == Backend::kNccl ? "nccl" : "gloo";
}

Backend ParseBackend(std::string_view name) {
  if (name == "gloo") return Backend::kGloo;
  if (name == "nccl") return Backend::kNccl;
  throw InvalidArgument("unknown backend '" + std::string(name) + "' (gloo, nccl)");
}

std::shared_ptr<Communicator> ProcessGroupHandle::MakeCommunicator() const {
  return std::make_shared<Communicator>(group, rank, world_size, timeout, control);
}

c10::intrusive_ptr<c10d::Store> HostStore(uint16_t port, std::chrono::milliseconds timeout,
                                          uint16_t* bound_port) {
  return HostRpcStore("127.0.0.1", port, timeout, {}, {}, bound_port);
}

ProcessGroupHandle Rendezvous(const RendezvousOptions& options) {
  options.Validate();
  ProcessGroupHandle handle;
  handle.rank = options.rank;
  handle.world_size = options.world_size;
  handle.timeout = options.timeout;
  handle.backend = options.backend;
  handle.gloo_hostname = options.gloo_hostname;
  handle.local_rank = options.local_rank;
  const std::string where = options.master_addr + ":" + std::to_string(options.master_port);
  const std::string what = "rank " + std::to_string(options.rank) + "/" +
                           std::to_string(options.world_size) + " rendezvous at " + where;
  try {
    if (options.host_store && options.rank == 0) {
      handle.store = HostRpcStore(options.master_addr, options.master_port, options.timeout,
                                  options.store_server_security, options.store_client_security,
                                  &handle.store_port);
    } else {
      RpcStoreOptions client;
      client.endpoint = StoreEndpoint(options.master_addr, options.master_port);
      client.timeout = options.timeout;
      client.security = options.store_client_security;
      handle.store = c10::make_intrusive<RpcStore>(client);
      handle.store_port = options.master_port;
    }
  } catch (const Error& e) {
    ThrowError(e.code(), what + " (the store): " + e.what());
  } catch (const std::exception& e) {
    ThrowCollectiveError(what + " (the store)", e, options.timeout);
  }
  try {
    // The Gloo group: the whole data plane on CPU, the control plane beside
    // NCCL. Both groups share the store under their own key prefixes.
    handle.control =
        MakeGlooGroup(c10::make_intrusive<c10d::PrefixStore>("gloo", handle.store), options.rank,
                      options.world_size, options.timeout, options.gloo_hostname);
    if (options.backend == Backend::kGloo) {
      handle.group = handle.control;
    } else {
      handle.group =
          MakeNcclGroup(c10::make_intrusive<c10d::PrefixStore>("nccl", handle.store), options.rank,
                        options.world_size, options.timeout, options.local_rank);
    }
  } catch (const Error& e) {
    // The store's own errors (a rank that never set its key: DeadlineExceeded).
    ThrowError(e.code(), what + " (waiting for all ranks to join): " + e.what());
  } catch (const std::exception& e) {
    ThrowCollectiveError(what + " (waiting for all ranks to join)", e, options.timeout);
  }
  return handle;
}

namespace {

// One plane of the mesh: `ranks` (world ranks, ascending) as a group of the
// world's backend under `prefix`; this rank is ranks[sub_rank].
std::shared_ptr<Communicator> MakeSubplane(const ProcessGroupHandle& world,
                                           const std::string& prefix,
                                           const std::vector<int>& ranks) {
  int sub_rank = 0;
  while (ranks[sub_rank] != world.rank) ++sub_rank;
  const int size = static_cast<int>(ranks.size());
  const std::string what = "rank " + std::to_string(world.rank) + "/" +
                           std::to_string(world.world_size) + " joining " + prefix + " (" +
                           std::to_string(size) + " ranks)";
  try {
    GroupPtr control =
        MakeGlooGroup(c10::make_intrusive<c10d::PrefixStore>(prefix + "/gloo", world.store),
                      sub_rank, size, world.timeout, world.gloo_hostname);
    GroupPtr group = control;
    if (world.backend == Backend::kNccl) {
      std::vector<int64_t> global(ranks.begin(), ranks.end());
      group = MakeNcclGroup(c10::make_intrusive<c10d::PrefixStore>(prefix + "/nccl", world.store),
                            sub_rank, size, world.timeout, world.local_rank, global);
    }
    return std::make_shared<Communicator>(group, sub_rank, size, world.timeout, control);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(what, e, world.timeout);
  }
}

}  // namespace

ShardMesh MakeShardMesh(const ProcessGroupHandle& world, int shard_group_size) {
  const int g = shard_group_size;
  CheckShardGroupSize(world.world_size, g);
  ShardMesh mesh = ShardMesh::OneDim(world.MakeCommunicator());
  if (g == world.world_size) return mesh;
  // Every rank builds its shard group first, then its replica group: shard
  // groups are disjoint and complete on their own, so no rank waits for one
  // that is still waiting for it.
  const std::string prefix = "hybrid" + std::to_string(g) + "/";
  if (g == 1) {
    mesh.shard = std::make_shared<Communicator>();
    mesh.replica = mesh.world;  // every rank, in world order
  } else {
    mesh.shard = MakeSubplane(world, prefix + "shard" + std::to_string(world.rank / g),
                              ShardGroupRanks(world.rank, world.world_size, g));
    mesh.replica = MakeSubplane(world, prefix + "replica" + std::to_string(world.rank % g),
                                ReplicaGroupRanks(world.rank, world.world_size, g));
  }
  mesh.Validate();
  return mesh;
}

}  // namespace rlswarm::learner
