#pragma once

// The spec a plugin declares (rlswarm_env_spec, envs/plugin_api.h), checked
// and turned into an EnvSpec. A plugin is code rlswarm did not compile, so
// everything a VectorEnv would size buffers or validate actions by is checked
// here, once, before the env is stepped.

#include <string>

#include "envs/plugin_api.h"
#include "envs/spec.h"

namespace rlswarm::envs {

// The largest observation a plugin env may have, in bytes: far beyond any
// real one, small enough that a VectorEnv's batch of them cannot overflow.
inline constexpr std::int64_t kMaxPluginObservationBytes = std::int64_t{1} << 30;

// Throws InvalidArgument starting with `where` and naming the field that is
// wrong: a name that is NULL, empty, too long or not printable ASCII; an
// unknown dtype; a rank outside 1..RLSWARM_PLUGIN_MAX_DIMS, a dimension <= 0
// or an observation over kMaxPluginObservationBytes; observation bounds that
// are half given, of a wrong count, NaN or with low > high; no actions, both
// kinds at once, more than RLSWARM_PLUGIN_MAX_ACTION_DIMS continuous ones, or
// continuous bounds missing, infinite or not low < high; a negative
// max_episode_steps.
EnvSpec ToEnvSpec(const rlswarm_env_spec& plugin_spec, const std::string& where);

}  // namespace rlswarm::envs
