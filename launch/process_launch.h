#pragma once

// Processes mode of `rlswarm launch`: the roles as supervised child
// processes of this one (ProcessSupervisor), talking over tcp on loopback.
//
//   replay-<i>    rlswarm replay --shard i      (stop stage 0: stopped last)
//   learner-<r>   rlswarm learner --rank r      (stage 1; one restart group)
//   actor-<k>     rlswarm actor --actor-id k    (stage 2: stopped first)
//
// Every child reads the run's config.yaml plus overrides that pin its
// endpoints: the ports are picked once per run, so a restarted replay shard
// or learner binds the same port and its peers simply reconnect. A crashed
// actor or replay shard is restarted with backoff (a shard resumes from its
// newest checkpoint); a crashed learner rank restarts the whole learner
// group, which resumes from its newest checkpoint. The evaluator is a thread
// of this launcher process (not of any training actor) subscribed to the
// learner's weights; the summary's final evaluation judges the learner's
// last checkpoint.

#include <signal.h>

#include "config/experiment_config.h"
#include "launch/run_directory.h"
#include "observe/scalar_log.h"

namespace rlswarm::launch {

// Runs until a stop condition, a signal of `stop_signals` (blocked by the
// caller), or a process given up after launch.max_restarts. `config`
// already points its checkpoint directories into `run`.
RunSummary RunProcesses(config::ExperimentConfig config, const RunDirectory& run,
                        observe::ScalarLog& scalars, const RunSummary& earlier,
                        const sigset_t& stop_signals);

}  // namespace rlswarm::launch
