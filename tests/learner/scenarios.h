#pragma once

// The multi-process learner scenarios that tests/learner/'s TESTs run: each
// rank of a scenario is this test binary re-executed with
// `--rlswarm-worker <scenario> ...` (learner/testing/harness.h), dispatched
// by WorkerMain (worker.cc), and reports through files in the test's
// directory.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "learner/dist/rendezvous.h"
#include "learner/fsdp/sharded_model.h"
#include "learner/testing/harness.h"
#include "models/model_spec.h"

namespace rlswarm::learner::testing {

// The worker side: argv after `--rlswarm-worker`. Returns the exit code.
int WorkerMain(int argc, char** argv);

// Every collective of the adapter on `comm`, on tensors of `device`, against
// values each rank can compute alone; one line "<name> <verdict>" each to
// <dir>/collectives.rank<r>.txt (worker.cc).
void CheckCollectives(Communicator& comm, const std::string& dir, const at::Device& device);
// Waits for the work queued on `device` (a no-op on the CPU).
void SyncDevice(const at::Device& device);

// The GPU primitives CudaPrimitivesTest checks (cuda_primitives_scenario.cc),
// rank 0 of a 1-rank NCCL group on cuda:0, NCCL's timing on: CheckCollectives
// on CUDA tensors, then one "<name> <value>" line each to
// <dir>/cuda_primitives.txt: storage released, re-allocated, taken and
// adopted keeps its device and data; the host time a collective's Wait()
// blocks behind a ~50 ms kernel, and that kernel's time; a batch staged
// and a device tensor copied to the host while the compute stream is busy
// (host time of each call, and whether the data arrived).
void RunCudaPrimitivesScenario(const ProcessGroupHandle& pg, const std::string& dir);
// A PeakMemoryMeter on cuda:0 as the very first CUDA call of a process,
// then 64 MiB allocated: writes "meter_first <peak bytes>" to
// <dir>/meter_first.txt (throws where the meter cannot be built first).
void RunMeterFirstScenario(const std::string& dir);

// The checkpoint and publishing scenarios (dqn_scenarios.cc): "ckpt_save",
// "ckpt_resume", "publish".
void RunDqnScenario(const std::string& scenario, std::shared_ptr<Communicator> comm,
                    const std::string& dir);

// The asynchronous checkpoint scenarios (async_checkpoint_scenarios.cc):
// "async_ckpt_match", "async_ckpt_kill", "async_ckpt_resume". They take the
// group's handle for its store.
void RunAsyncCheckpointScenario(const std::string& scenario, const ProcessGroupHandle& pg,
                                const std::string& dir);
// The watchdog scenarios (watchdog_scenario.cc; 2 ranks, a Gloo group with a
// 60 s timeout, learner/watchdog.h with a 2 s timeout whose alarm writes its
// message to <dir>/alarm.rank<r>.txt and exits kWatchdogExitCode):
//   watchdog_stop: every rank writes <dir>/ready.rank<r> after its first
//     all-reduces, then all-reduces until killed (the test stops a rank).
//   watchdog_wait: rank 0 waits in an all-reduce while rank 1 is busy
//     outside any collective for 5 s, then both are outside collectives for
//     5 s, then one last all-reduce; exits 0.
void RunWatchdogScenario(const std::string& scenario, int rank, int world_size, uint16_t port,
                         const std::string& dir);

// The step-health scenario (step_health_test.cc) on the "full_shard_clipped"
// case, this rank's share of each global batch: steps 0 and 1 train, step 2
// has a NaN in the last rank's gradient shard, step 3 trains again. Rank 0
// writes the full parameters before each step and after the last to
// <dir>/health_params<k>.bin (k = 0..4); every rank writes
// <dir>/health.rank<r>.bin: grad norm of step 0, update-to-weight ratio and
// its optimizer step as known after step 1, skipped and skipped_steps after
// step 2, 1 if the local shard and optimizer state were unchanged by step 2,
// skipped, skipped_steps and the optimizer step count after step 3.
void RunHealthScenario(ShardedModel& model, int rank, int world_size, const std::string& dir);

// The hybrid_shard scenario (hybrid_scenario.cc): for each shard group size
// of HybridRuns(world size), MakeShardMesh and train the run's cases
// (HybridCase) for kSteps; what it writes is listed there.
struct HybridRun {
  int shard_group_size = 0;
  std::vector<std::string> cases;
  // The case whose trained state is checkpointed to <dir>/ckpt_g<G> and
  // loaded back into a fresh model on the mesh; empty = none.
  std::string checkpointed;
};
std::vector<HybridRun> HybridRuns(int world_size);
TrainCase HybridCase(const std::string& name);
void RunHybridScenario(const ProcessGroupHandle& pg, const std::string& dir);
// Trains kSteps on rank `rank`'s share of each global batch (a world of
// `world_size` ranks); returns health().grad_norm of every step.
std::vector<double> TrainAndRecordNorms(ShardedModel& model, const models::ModelSpec& spec,
                                        int rank, int world_size);
// The activation-checkpointing scenario (activation_checkpoint_scenario.cc):
// every ActivationCheckpointCases() case trained without and with
// ShardingOptions::activation_checkpointing; see that file for what it writes.
std::vector<TrainCase> ActivationCheckpointCases();
void RunActivationCheckpointScenario(std::shared_ptr<Communicator> comm, int rank, int world_size,
                                     const std::string& dir);

// The trace scenario (trace_scenario.cc): one traced update of the MLP per
// strategy, merged on rank 0 into <dir>/trace_<case>.json.
void RunTraceScenario(std::shared_ptr<Communicator> comm, int rank, int world_size,
                      const std::string& dir);

// The TD3 scenario (td3_case.h).
void RunTd3Scenario(std::shared_ptr<Communicator> comm, const std::string& dir);

// Steps [first, last) of regression training on this rank's share of each
// GlobalBatch, with a Polyak (0.1) target update after every step.
void TrainSteps(ShardedModel& model, ShardedModel& target, const models::ModelSpec& spec, int first,
                int last);

}  // namespace rlswarm::learner::testing
