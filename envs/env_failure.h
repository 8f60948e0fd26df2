#pragma once

// EnvFailure: an env failed while it ran, in a way its owner can recover
// from by restarting it (VectorEnv::Restart): a Gymnasium env raised,
// returned a malformed observation or reward, or its worker process died; a
// plugin's step or reset reported an error or returned a non-finite reward.
// The actor counts it, restarts its envs and goes on (see actors/actor.h).
// Errors in how an env is configured are InvalidArgument, never this.

#include "common/errors.h"

namespace rlswarm::envs {

class EnvFailure : public Internal {
 public:
  using Internal::Internal;
};

}  // namespace rlswarm::envs
