#pragma once

// Embedded mode of `rlswarm launch`: every role of the run as threads of
// this process, talking over ZeroMQ inproc:// endpoints (one shared
// context): the replay shards (ReplayService), one learner rank
// (DqnLearner, world size 1), actor.num_actors actors (Actor), and the
// RunMonitor's evaluator. Small problems do not pay for processes: every
// process that loads LibTorch pays 0.4-0.6 s first.
//
// Stop order (SIGINT/SIGTERM, a stop condition, or a role failing): actors
// stop and flush while the learner still samples (so the rate limiter lets
// their last inserts in); the learner publishes and checkpoints; the final
// evaluation runs; the replay shards checkpoint and close.

#include <signal.h>

#include "config/experiment_config.h"
#include "launch/run_directory.h"
#include "observe/scalar_log.h"

namespace rlswarm::launch {

// Runs until a stop condition or a signal of `stop_signals` (which the
// caller has blocked in every thread). `config` already points its
// checkpoint directories into `run`. Throws what a role threw while
// starting; a role failing later stops the run (stop_reason says why).
RunSummary RunEmbedded(config::ExperimentConfig config, const RunDirectory& run,
                       observe::ScalarLog& scalars, const RunSummary& earlier,
                       const sigset_t& stop_signals);

}  // namespace rlswarm::launch
