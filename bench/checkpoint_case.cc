#include "bench/checkpoint_case.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "common/errors.h"
#include "learner/checkpoint/async_checkpoint.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/fsdp/sharded_model.h"

namespace rlswarm::bench {
namespace {

namespace fs = std::filesystem;
namespace lrn = rlswarm::learner;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One Adam step on a random batch: the state changes between saves, as in
// training.
void TrainStep(lrn::ShardedModel& model, lrn::ShardedModel& target, const models::ModelSpec& spec,
               int64_t batch, const at::Device& device) {
  std::vector<int64_t> shape = {batch};
  shape.insert(shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  at::Tensor x = at::rand(shape, at::TensorOptions().device(device));
  model.ZeroGrad();
  model.Forward(x).pow(2).mean().backward();
  model.Step();
  target.PolyakUpdate(model, 0.01);
}

}  // namespace

nlohmann::json MeasureCheckpoint(const models::ModelSpec& spec, const std::string& model,
                                 int64_t batch, int world_size,
                                 const CheckpointCaseOptions& options) {
  if (world_size != 1) throw std::invalid_argument("checkpoint case: world size 1 only");
  // Every save logs its stall at info, and spdlog's default logger writes to
  // stdout, where --json goes: warnings only while this case runs.
  struct QuietLog {
    spdlog::level::level_enum was = spdlog::get_level();
    QuietLog() { spdlog::set_level(spdlog::level::warn); }
    ~QuietLog() { spdlog::set_level(was); }
  } quiet;
  std::string pattern = (fs::path(options.dir) / "checkpoint_case_XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Unavailable("checkpoint case: cannot make a directory under " + options.dir);
  }
  const fs::path root = pattern;
  const at::Device device = options.device == "cuda" ? at::Device(at::kCUDA, 0) : at::kCPU;
  lrn::ShardedModelOptions o;
  o.device = device;
  o.optimizer.kind = lrn::OptimizerKind::kAdam;
  o.optimizer.lr = 1e-3;
  auto comm = std::make_shared<lrn::Communicator>();
  lrn::ShardedModel online(spec, o, comm);
  std::unique_ptr<lrn::ShardedModel> target = online.MakeTarget();
  TrainStep(online, *target, spec, batch, device);  // creates the optimizer state
  const int reps = std::max(1, options.reps);
  int64_t update = 1;

  std::vector<double> sync_s;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    lrn::SaveCheckpoint((root / "sync").string(), online, target.get(), {update++, 0}, 1);
    sync_s.push_back(Seconds(Clock::now() - t0));
    TrainStep(online, *target, spec, batch, device);
  }

  std::vector<double> stall_s, total_s;
  {
    lrn::AsyncCheckpointOptions ao;
    ao.root = (root / "async").string();
    ao.keep = 1;
    lrn::AsyncCheckpointer checkpointer(ao, online, target.get(), {});
    for (int r = -1; r < reps; ++r) {  // r = -1: the warm-up that allocates the buffer
      const auto t0 = Clock::now();
      checkpointer.Save({update++, 0});
      const double stall = Seconds(Clock::now() - t0);
      TrainStep(online, *target, spec, batch, device);  // training goes on meanwhile
      if (!checkpointer.Wait(std::chrono::hours(1))) throw DeadlineExceeded("checkpoint case");
      const std::optional<lrn::AsyncSaveReport> report = checkpointer.TakeFinished();
      if (!report || !report->ok) {
        throw Unavailable("checkpoint case: " +
                          (report ? report->error : std::string("no report")));
      }
      if (r < 0) continue;
      stall_s.push_back(stall);
      total_s.push_back(report->stall_seconds + report->write_seconds);
    }
  }
  std::error_code ignored;
  fs::remove_all(root, ignored);
  return {{"case", "checkpoint"},
          {"model", model},
          {"batch", batch},
          {"params", spec.Numel()},
          {"world_size", world_size},
          {"sync_save_s", Median(sync_s)},
          {"async_stall_s", Median(stall_s)},
          {"async_total_s", Median(total_s)}};
}

}  // namespace rlswarm::bench
