#include "learner/rendezvous.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef RLSWARM_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

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
#ifndef RLSWARM_WITH_CUDA
  if (backend == Backend::kNccl) {
    throw InvalidArgument("rendezvous: NCCL needs a build with RLSWARM_WITH_CUDA=ON");
  }
#endif
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
    if (options.backend == Backend::kGloo) {
      auto gloo_opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
      gloo_opts->devices.push_back(
          options.gloo_hostname.empty()
              ? c10d::ProcessGroupGloo::createDefaultDevice()
              : c10d::ProcessGroupGloo::createDeviceForHostname(options.gloo_hostname));
      // Two threads: one can run a prefetched all-gather while the other
      // finishes the collective before it.
      gloo_opts->threads = 2;
      handle.group = c10::make_intrusive<c10d::ProcessGroupGloo>(handle.store, options.rank,
                                                                 options.world_size, gloo_opts);
    } else {
#ifdef RLSWARM_WITH_CUDA
      auto nccl_opts = c10d::ProcessGroupNCCL::Options::create();
      nccl_opts->timeout = options.timeout;
      handle.group = c10::make_intrusive<c10d::ProcessGroupNCCL>(handle.store, options.rank,
                                                                 options.world_size, nccl_opts);
#endif
    }
  } catch (const std::exception& e) {
    ThrowCollectiveError(what + " (waiting for all ranks to join)", e, options.timeout);
  }
  return handle;
}

}  // namespace rlswarm::learner
