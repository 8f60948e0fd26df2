#pragma once

// Test-only support for real multi-process learner tests (the scenarios
// themselves are in tests/learner/): the test binary re-executes itself
// (/proc/self/exe) once per rank with `--rlswarm-worker <scenario> ...`; the parent hosts the store
// on a free port (read back, never fixed) and waits for the children's exit through a pidfd with a
// deadline, never by sleeping. Children are spawned (common/testing/child_process.h), not forked,
// so no torch thread of the parent is duplicated.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "learner/dist/rendezvous.h"
#include "learner/fsdp/sharded_model.h"
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

// RunWorkers(scenario, world_size) once per test binary: ctest runs every
// TEST in its own process, so the results go to a directory keyed by this
// executable's identity (inode, size, mtime) and the scenario; the first
// process runs the workers holding an flock on it, the others wait on that
// lock, then read. Returns the directory; <dir>/exit_codes.txt holds the
// ranks' exit codes (ExitCodes).
std::string RunWorkersOnce(const std::string& scenario, int world_size,
                           std::chrono::seconds deadline);
std::vector<int> ExitCodes(const std::string& dir);

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

inline constexpr int kSteps = 5;
inline constexpr int kGlobalBatch = 12;  // divisible by 1, 2, 3

// The global batch of `step`: observations and regression targets (float64).
std::pair<at::Tensor, at::Tensor> GlobalBatch(const models::ModelSpec& spec, int step);

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
