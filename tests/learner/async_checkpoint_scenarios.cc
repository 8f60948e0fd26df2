// The multi-process scenarios of the asynchronous checkpoint tests
// (async_checkpoint_test.cc), float64 full_shard training with Adam and a
// Polyak target, as the synchronous checkpoint scenarios:
//   async_ckpt_match: steps [0, 5), a synchronous checkpoint under
//     <dir>/sync, then an asynchronous one of the same state under
//     <dir>/async whose writer is held before writing until steps [5, 10)
//     have changed every shard; each rank writes "<ok>" to
//     <dir>/match.rank<r>.txt.
//   async_ckpt_kill: steps [0, 2), an asynchronous checkpoint of update 2
//     (waited for; rank 0 writes the online parameters to
//     <dir>/kill_ref.bin), steps [2, 4), then one of update 4 whose writer
//     stops for good on the last rank, printing "paused" on stdout: at world
//     1 before the manifest is written, at world 2 after rank 1's shard is
//     durable but before it reports. The test kills that process (kill -9);
//     at world 2 rank 0 writes "<ok> <error>" of its report (it waits 2 s
//     for rank 1) to <dir>/kill.rank0.txt.
//   async_ckpt_cancel: (world 2) steps [0, 2), an asynchronous checkpoint
//     of update 2 whose writer stops for good on rank 1 as in
//     async_ckpt_kill; rank 0 (agreement timeout 10 min) destroys its
//     checkpointer at once and writes "returned" to <dir>/cancel.rank0.txt.
//   async_ckpt_resume: loads the newest checkpoint under <dir>/ckpt and
//     writes the update count and the online parameters to
//     <dir>/resumed.txt and <dir>/resumed.bin.

#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>

#include "learner/checkpoint/async_checkpoint.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/dist/rendezvous.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {
namespace {

ShardedModelOptions Options() {
  ShardedModelOptions o;
  o.sharding.mixed_precision = MixedPrecisionPolicy::Uniform(at::kDouble);
  o.optimizer.kind = OptimizerKind::kAdam;
  o.optimizer.lr = 1e-2;
  o.seed = 11;
  return o;
}

void Match(const ProcessGroupHandle& pg, ShardedModel& model, ShardedModel& target,
           const models::ModelSpec& spec, const std::string& dir) {
  TrainSteps(model, target, spec, 0, 5);
  SaveCheckpoint(dir + "/sync", model, &target, CheckpointProgress{5, 11});
  std::promise<void> trained;
  std::shared_future<void> released = trained.get_future().share();
  AsyncCheckpointOptions o;
  o.root = dir + "/async";
  o.writer_hook = [released](std::string_view stage, int64_t) {
    if (stage == "before_write") released.wait();
  };
  AsyncCheckpointer checkpointer(o, model, &target, pg.store);
  checkpointer.Save(CheckpointProgress{5, 11});
  TrainSteps(model, target, spec, 5, 10);  // every section changes under the paused writer
  trained.set_value();
  const bool done = checkpointer.Wait(std::chrono::seconds(30));
  const std::optional<AsyncSaveReport> report = checkpointer.TakeFinished();
  std::ofstream(dir + "/match.rank" + std::to_string(pg.rank) + ".txt")
      << (done && report && report->ok ? 1 : 0) << (report ? " " + report->error : "");
}

void Kill(const ProcessGroupHandle& pg, ShardedModel& model, ShardedModel& target,
          const models::ModelSpec& spec, const std::string& dir) {
  const int last = pg.world_size - 1;
  AsyncCheckpointOptions o;
  o.root = dir + "/ckpt";
  o.agreement_timeout = std::chrono::milliseconds(2000);
  o.writer_hook = [&pg, last](std::string_view stage, int64_t update) {
    const char* where = pg.world_size == 1 ? "before_publish" : "shard_durable";
    if (update != 4 || pg.rank != last || stage != where) return;
    std::printf("paused\n");
    std::fflush(stdout);
    for (;;) ::pause();  // until the test's SIGKILL
  };
  AsyncCheckpointer checkpointer(o, model, &target, pg.store);
  TrainSteps(model, target, spec, 0, 2);
  checkpointer.Save(CheckpointProgress{2, 11});
  if (!checkpointer.Wait(std::chrono::seconds(30))) throw std::runtime_error("save 2 hangs");
  const models::NamedTensors ref = model.FullParameters();
  if (pg.rank == 0) WriteDoubles(dir + "/kill_ref.bin", Flatten(ref));
  TrainSteps(model, target, spec, 2, 4);
  checkpointer.Save(CheckpointProgress{4, 11});
  if (pg.rank == last) {
    checkpointer.Wait(std::chrono::hours(1));  // the hook never returns
    return;
  }
  const bool done = checkpointer.Wait(std::chrono::seconds(30));
  const std::optional<AsyncSaveReport> report = checkpointer.TakeFinished();
  std::ofstream(dir + "/kill.rank0.txt")
      << (done && report && report->ok ? 1 : 0) << " " << (report ? report->error : "none");
  // A peer is gone: leave without the group's destructors (see worker.cc).
  std::_Exit(0);
}

void Cancel(const ProcessGroupHandle& pg, ShardedModel& model, ShardedModel& target,
            const models::ModelSpec& spec, const std::string& dir) {
  AsyncCheckpointOptions o;
  o.root = dir + "/ckpt";
  o.agreement_timeout = std::chrono::minutes(10);
  o.writer_hook = [&pg](std::string_view stage, int64_t) {
    if (pg.rank != 1 || stage != "shard_durable") return;
    std::printf("paused\n");
    std::fflush(stdout);
    for (;;) ::pause();  // until the test's SIGKILL
  };
  {
    AsyncCheckpointer checkpointer(o, model, &target, pg.store);
    TrainSteps(model, target, spec, 0, 2);
    checkpointer.Save(CheckpointProgress{2, 11});
    if (pg.rank == 1) {
      checkpointer.Wait(std::chrono::hours(1));  // the hook never returns
      return;
    }
  }  // rank 0: cancels the wait for rank 1's report
  std::ofstream(dir + "/cancel.rank0.txt") << "returned";
  std::_Exit(0);
}

}  // namespace

void RunAsyncCheckpointScenario(const std::string& scenario, const ProcessGroupHandle& pg,
                                const std::string& dir) {
  auto comm = std::make_shared<Communicator>(pg.group, pg.rank, pg.world_size, pg.timeout);
  const models::ModelSpec spec = CaseSpec("mlp");
  ShardedModel model(spec, Options(), comm);
  std::unique_ptr<ShardedModel> target = model.MakeTarget();
  if (scenario == "async_ckpt_match") return Match(pg, model, *target, spec, dir);
  if (scenario == "async_ckpt_kill") return Kill(pg, model, *target, spec, dir);
  if (scenario == "async_ckpt_cancel") return Cancel(pg, model, *target, spec, dir);
  if (scenario == "async_ckpt_resume") {
    const std::optional<std::string> latest = FindLatestCheckpoint(dir + "/ckpt");
    if (!latest) throw std::runtime_error("no checkpoint");
    const CheckpointProgress progress = LoadCheckpoint(*latest, model, target.get());
    const models::NamedTensors loaded = model.FullParameters();
    if (pg.rank == 0) {
      WriteDoubles(dir + "/resumed.bin", Flatten(loaded));
      std::ofstream(dir + "/resumed.txt") << progress.update_count;
    }
    return;
  }
  throw std::runtime_error("unknown scenario " + scenario);
}

}  // namespace rlswarm::learner::testing
