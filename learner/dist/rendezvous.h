#pragma once

// Rendezvous of the learner ranks: the learner's own store (store_server.h,
// rpc_store.h; bound to master_addr only, CURVE when security is on) for the
// handshake and process groups for the collectives: Gloo on CPU; with Backend::kNccl (a
// CUDA build) an NCCL group for the data plane plus a Gloo group beside it
// for the control plane (communicator.h). Every wait is bounded by
// RendezvousOptions::timeout, so a rank that never arrives, or dies later,
// surfaces as a typed error instead of the 30-minute c10d default.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "learner/dist/communicator.h"
#include "learner/dist/rpc_store.h"
#include "learner/dist/shard_mesh.h"
#include "learner/dist/torch_adapter.h"

namespace rlswarm::learner {

enum class Backend { kGloo, kNccl };

struct RendezvousOptions {
  std::string master_addr = "127.0.0.1";
  // 0 is valid only for the rank that hosts the store: it binds a free port,
  // which ProcessGroupHandle::store_port reports.
  uint16_t master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // which accelerator a CUDA rank uses: cuda:local_rank
  // Ranks on this node (torchrun's LOCAL_WORLD_SIZE); 0 = not known. The
  // default shard group size of hybrid_shard (shard_mesh.h).
  int local_world_size = 0;
  // Bounds the store connection, the wait for all ranks, and every collective.
  std::chrono::milliseconds timeout{10000};
  // Rank 0 hosts the store (a StoreServer bound to master_addr:master_port)
  // unless a launcher (or a test harness) already runs one there.
  bool host_store = true;
  // The store's rpc security (rpc/security.h): the server side for the rank
  // that hosts it, the client side for every rank. Default: no CURVE.
  rpc::SecurityOptions store_server_security;
  rpc::SecurityOptions store_client_security;
  // Address Gloo binds for its pair connections; empty = resolve this host's
  // name (Gloo's default device). Loopback tests use "127.0.0.1".
  std::string gloo_hostname;
  Backend backend = Backend::kGloo;

  // Throws InvalidArgument: rank outside [0, world_size), world_size < 1,
  // non-positive timeout, NCCL without a CUDA build.
  void Validate() const;
};

std::string_view BackendName(Backend backend);
// "gloo" or "nccl"; throws InvalidArgument otherwise.
Backend ParseBackend(std::string_view name);

// What a rank holds after rendezvous. The store must outlive the groups.
struct ProcessGroupHandle {
  c10::intrusive_ptr<c10d::Store> store;
  GroupPtr group;    // data plane: Gloo, or NCCL
  GroupPtr control;  // control plane: Gloo (the same group as `group` for Gloo)
  int rank = 0;
  int world_size = 1;
  uint16_t store_port = 0;  // the port actually bound/connected
  std::chrono::milliseconds timeout{0};
  // How the groups were made, for the subgroups of MakeShardMesh.
  Backend backend = Backend::kGloo;
  std::string gloo_hostname;
  int local_rank = 0;

  // A Communicator over both planes.
  std::shared_ptr<Communicator> MakeCommunicator() const;
};

// The 2-D mesh of hybrid_shard over `world` (shard_mesh.h): this rank's shard
// group of `shard_group_size` consecutive ranks and its replica group, each a
// new group of the world's backend (NCCL subgroups come with a Gloo control
// group each) on the world's store under its own key prefix
// ("hybrid<G>/shard<g>", "hybrid<G>/replica<s>"), so a rank builds only the
// two groups it belongs to, and meshes of different sizes can coexist.
// G = 1 needs no shard group (a group-less world-1 Communicator) and reuses
// the world as its replica group; G = W is the 1-D mesh and builds nothing.
// Collective over the world: every rank calls it with the same G, after
// Rendezvous. Blocks until both groups have all their ranks or the world's
// timeout passes. Throws InvalidArgument (before building anything) when G
// does not divide the world size; DeadlineExceeded / Unavailable as
// Rendezvous does.
ShardMesh MakeShardMesh(const ProcessGroupHandle& world, int shard_group_size);

// Connects to (or hosts) the store and builds the process group. Blocks until
// all world_size ranks have joined or options.timeout passes. Throws
// DeadlineExceeded when a rank does not arrive in time (the message names the
// rank, the address and the timeout), Unavailable when the store cannot be
// reached or bound.
ProcessGroupHandle Rendezvous(const RendezvousOptions& options);

// Hosts a bare store (StoreServer on 127.0.0.1, port 0 = any free port,
// reported in *bound_port) that ranks with host_store = false connect to:
// what the multi-process tests and benches use so no rank has to publish its
// port. The returned client keeps the server running.
c10::intrusive_ptr<c10d::Store> HostStore(uint16_t port, std::chrono::milliseconds timeout,
                                          uint16_t* bound_port);

}  // namespace rlswarm::learner
