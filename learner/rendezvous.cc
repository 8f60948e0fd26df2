#include "learner/rendezvous.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/errors.h"
#include "learner/collective_errors.h"

namespace rlswarm::learner {

void RendezvousOptions::Validate() const {
  if (world_size < 1) throw InvalidArgument("rendezvous: world_size must be >= 1");
  if (rank < 0 || rank >= world_size) {
    throw InvalidArgument("rendezvous: rank " + std::to_string(rank) + " outside [0, " +
                          std::to_string(world_size) + ")");
  }
  if (local_rank < 0) throw InvalidArgument("rendezvous: local_rank must be >= 0");
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
  c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.isServer = true;
  opts.waitWorkers = false;  // ranks count themselves in through the group
  opts.timeout = timeout;
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
    if (bound_port != nullptr) *bound_port = store->getPort();
    return store;
  } catch (const std::exception& e) {
    throw Unavailable("cannot host a TCPStore on port " + std::to_string(port) + ": " + e.what());
  }
}

ProcessGroupHandle Rendezvous(const RendezvousOptions& options) {
  options.Validate();
  ProcessGroupHandle handle;
  handle.rank = options.rank;
  handle.world_size = options.world_size;
  handle.timeout = options.timeout;
  const std::string where = options.master_addr + ":" + std::to_string(options.master_port);
  const std::string what = "rank " + std::to_string(options.rank) + "/" +
                           std::to_string(options.world_size) + " rendezvous at " + where;
  c10d::TCPStoreOptions opts;
  opts.port = options.master_port;
  opts.isServer = options.host_store && options.rank == 0;
  opts.waitWorkers = false;
  opts.timeout = options.timeout;
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, opts);
    handle.store_port = store->getPort();
    handle.store = store;
  } catch (const std::exception& e) {
    ThrowCollectiveError(what + " (connecting to the store)", e, options.timeout);
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
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowCollectiveError(what + " (waiting for all ranks to join)", e, options.timeout);
  }
  return handle;
}

}  // namespace rlswarm::learner
