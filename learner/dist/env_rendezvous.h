#pragma once

// Maps the launcher's environment onto RendezvousOptions, so `torchrun
// --no-python` and Slurm start ranks unchanged. The library does not read the
// environment itself: apps pass a getter (std::getenv in production, a map in
// tests).

#include <functional>
#include <optional>
#include <string>

#include "learner/dist/rendezvous.h"

namespace rlswarm::learner {

using EnvGetter = std::function<std::optional<std::string>(const char* name)>;

// Starts from `defaults` and overrides from:
//   MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,
//   LOCAL_WORLD_SIZE                                        (torchrun)
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID               (srun, when the
//                                                            torchrun names are unset)
//   SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST (without MASTER_ADDR:
//                                                            the first node of the
//                                                            first that is set)
// Throws InvalidArgument naming the variable when a value is not an integer
// in range, then validates the result.
RendezvousOptions RendezvousOptionsFromEnv(const EnvGetter& getenv,
                                           RendezvousOptions defaults = {});

// The first host of a Slurm node list ("gpu[01-04,07],cpu3" -> "gpu01");
// throws InvalidArgument for a list it cannot read.
std::string FirstHostOfSlurmNodeList(const std::string& list);

}  // namespace rlswarm::learner
