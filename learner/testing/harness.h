#pragma once

// Test-only support for real multi-process learner tests: the test binary
// re-executes itself (/proc/self/exe) once per rank with
// `--rlswarm-worker <scenario> ...`; the parent hosts the store on a free
// port (read back, never fixed) and waits for the children's exit through a
// pidfd with a deadline, never by sleeping. Children are spawned
// (common/testing/child_process.h), not forked, so no torch thread of the
// parent is duplicated.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "learner/rendezvous.h"
#include "learner/sharded_model.h"
#include "models/model_spec.h"

namespace rlswarm::learner {
struct ProcessGroupHandle;  // rendezvous.h
}  // namespace rlswarm::learner

namespace rlswarm::learner::testing {

struct WorkerExit {
  int exit_code = -1;  // -N when killed by signal N, -1000 when it missed the deadline
  double seconds = 0;  // from spawn to exit
};

// Spawns world_size workers for `scenario` and waits for all of them.
std::vector<WorkerExit> RunWorkers(const std::string& scenario, int world_size,
                                   const std::string& dir, std::chrono::seconds deadline);

// The worker side: argv after `--rlswarm-worker`. Returns the exit code.
int WorkerMain(int argc, char** argv);

// RunWorkers(scenario, world_size) once per test binary: ctest runs every
// TEST in its own process, so the results go to a directory keyed by this
// executable's identity (inode, size, mtime) and the scenario; the first
// process runs the workers holding an flock on it, the others wait on that
// lock, then read. Returns the directory; <dir>/exit_codes.txt holds the
// ranks' exit codes (ExitCodes).
std::string RunWorkersOnce(const std::string& scenario, int world_size,
                           std::chrono::seconds deadline);
std::vector<int> ExitCodes(const std::string& dir);

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

// One configuration trained identically by the workers and the reference.
struct TrainCase {
  std::string name;
  // "mlp" (dueling, odd sizes -> padding), "minatar", "residual_mlp",
  // "residual_conv" (see CaseSpec).
  std::string model = "mlp";
  ShardedModelOptions options;
  // Compared to the plain reference with this max-abs tolerance; negative:
  // the case is a negative control and must NOT match.
  double tolerance = 1e-10;
};
std::vector<TrainCase> EquivalenceCases();
models::ModelSpec CaseSpec(const std::string& model);

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

inline constexpr int kSteps = 5;
inline constexpr int kGlobalBatch = 12;  // divisible by 1, 2, 3

// The global batch of `step`: observations and regression targets (float64).
std::pair<at::Tensor, at::Tensor> GlobalBatch(const models::ModelSpec& spec, int step);

// Steps [first, last) of regression training on this rank's share of each
// GlobalBatch, with a Polyak (0.1) target update after every step.
void TrainSteps(ShardedModel& model, ShardedModel& target, const models::ModelSpec& spec, int first,
                int last);

// 1-process plain LibTorch training (a leaf per parameter, torch::optim and
// torch::nn::utils::clip_grad_norm_) of the case's model in float64.
models::NamedTensors PlainTrain(const TrainCase& c);

void WriteDoubles(const std::string& path, const std::vector<double>& values);
std::vector<double> ReadDoubles(const std::string& path);
std::vector<double> Flatten(const models::NamedTensors& named);
// Largest |a[i] - b[i]|; infinity when the sizes differ or both are empty.
double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b);
std::string ReadText(const std::string& path);

}  // namespace rlswarm::learner::testing
