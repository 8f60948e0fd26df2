// learner_bench: updates per second of the sharded learner core against plain
// LibTorch training of the same model, measured in the same run.
//
//   learner_bench [--json] [--seconds S] [--reps R] [--models mlp,minatar]
//                 [--batches 128,512] [--worlds 1,2] [--device cpu|cuda]
//                 [--backend auto|gloo|nccl] [--param-dtype D] [--reduce-dtype D]
//                 [--prefetch-depths 2] [--threads 1] [--large] [--isolate]
//                 [--activation-checkpointing] [--trace FILE]
//                 [--dqn-update] [--checkpoint] [--scaling-rounds N]
//
// One update = zero grad, forward, MSE against random targets, backward,
// optimizer step (Adam, lr 1e-3) on a fixed random global batch. Plain:
// torch::nn::Sequential + torch::optim::Adam in this process. World 1: a
// ShardedModel without process group (collectives skipped). World 2: two
// ranks re-executed from this binary (`--worker`), Gloo on 127.0.0.1 (or
// NCCL on cuda:<rank> with --device cuda), each rank computing on half of
// the global batch. World 1 on cuda runs without a group, as the learner
// does; with --backend nccl it runs as a 1-rank NCCL group instead (the
// sharded path through NCCL). Every process uses one intra-op thread (the
// machine has 2 cores) unless --threads says otherwise. Figures are medians
// of --reps measurements of --seconds each.
//
// JSON: {"results": [{"model", "batch", "world_size", "device", "backend",
//   "strategy", "reduce_scatter", "param_dtype", "reduce_dtype", "units",
//   "updates_per_sec", "plain_updates_per_sec", "state_bytes_per_rank",
//   "unsharded_state_bytes", "comm_bytes_per_update",
//   "collectives_per_update", "comm_seconds_per_update",
//   "comm_span_union_seconds_per_update", "comm_wait_seconds_per_update",
//   "busy_not_waited_fraction", "compute_alone_seconds_per_update",
//   "comm_alone_seconds_per_update", "exposed_comm_seconds_per_update",
//   "hidden_fraction", "overlap_fraction", "forward_prefetch",
//   "backward_prefetch", "peak_bytes_per_rank",
//   "measured_peak_bytes_per_rank", "params", "threads_per_rank",
//   "activation_checkpointing", ...}...], "definitions": {key: words},
//   "torch": "...", "blas": "...", "malloc_tuned": true,
//   "resets_high_water_mark": true}
// reduce_scatter is the implementation that ran: "native" is the backend's
// own (NCCL; Gloo in LibTorch 2.x), "alltoall" and "allreduce" the fallbacks
// that LibTorch 1.13's Gloo needs; on 2.x both native and alltoall rows run.
// comm_seconds_per_update: the sum over collectives of issue-to-completion
// time (CPU wall clock; on CUDA NCCL's own CUDA-event timing), which counts
// time queued behind other collectives and overlapping spans once per
// collective; comm_span_union_seconds_per_update: the union of those spans.
// hidden_fraction (and overlap_fraction, the same value under its older
// name), on CPU and CUDA alike: 1 - max(0, update - compute alone) / comm
// alone, from the same run (bench/comm_overlap.h has the definitions, and
// the JSON's "definitions" repeats them); null at world 1.
// busy_not_waited_fraction: 1 - wait / sum of spans, what overlap_fraction
// was on the CPU before, kept only to compare with.
// peak_bytes_per_rank = state bytes + most gathered parameter bytes held at
// once + the largest unit's full-size gradient (the reduce-scatter input).
// measured_peak_bytes_per_rank: what the process really held at its peak
// above its footprint just before the model was built (PeakMemoryMeter,
// learner/dist/memory_peak.h: resident high-water mark on the CPU, the caching
// allocator's peak on CUDA), the largest over the ranks; it counts the
// batch's activations and autograd's saved tensors, which the computed
// figure leaves out, and the allocator's page granularity.
// --large: the >= 50 M parameter model (resmlp_large, 50.6 M in 96 units),
// batch 512, every case in its own process (--isolate): world 1 with 1 and 2
// threads, world 2 with 1 thread per rank in full_shard and in no_shard
// (whose ranks hold the whole model and halve only the batch: beside
// full_shard it separates what sharding saves from what the split batch
// saves); then the checkpoint row of the same model (--checkpoint, 2
// saves). The scaling rounds stay out (3-4 min each for this model) unless
// --scaling-rounds is given.
// --scaling-rounds N: N rounds of world 1 with 1 thread, world 1 with 2
// threads and world 2 with 1 thread per rank (full_shard), each case in its
// own process, updates/s only (bench/scaling_rounds.h): {"case":
// "scaling_round", ...} per round and a {"case": "scaling", ...} summary
// with min / median / max of each ratio. Without --large, only the rounds.
// --checkpoint [--checkpoint-dir D]: only the checkpoint case
// (bench/checkpoint_case.h) for each --models entry at world 1, batch = the
// first --batches entry, --reps saves: {"results": [{"case": "checkpoint",
// "model", "batch", "params", "world_size", "sync_save_s",
// "async_stall_s", "async_total_s"}...]}.
// --dqn-update [--configs-dir D]: only the dqn_update case
// (bench/dqn_update_case.h): the learner's whole DQN update at world 1
// against the plain LibTorch update of the same network, for
// configs/cartpole.yaml at batch 128 and configs/minatar_breakout.yaml at
// 64 and 512: {"results": [{"case": "dqn_update", "config", "model",
// "batch", "updates_per_sec", "plain_updates_per_sec",
// "time_ratio_to_plain", ...}...]}.
// --prefetch-depths: full_shard and shard_grad_op run once per depth
// (forward = backward prefetch = depth); the other variants at the library
// default (2), where prefetch either does not apply or there is one unit.

#include <ATen/Parallel.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/checkpoint_case.h"
#include "bench/comm_overlap.h"
#include "bench/dqn_update_case.h"
#include "bench/scaling_rounds.h"
#include "common/testing/child_process.h"
#include "learner/dist/device_plan.h"
#include "learner/dist/memory_peak.h"
#include "learner/dist/rendezvous.h"
#include "learner/dist/trace_update.h"
#include "learner/fsdp/sharded_model.h"
#include "models/blas_check.h"
#include "models/q_networks.h"
#include "models/residual_networks.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace lrn = rlswarm::learner;
namespace mdl = rlswarm::models;

// --device: where plain and sharded models run. cuda needs a CUDA LibTorch
// (RLSWARM_WITH_CUDA build); world 2 then uses NCCL, rank r on cuda:r.
torch::Device g_device = torch::kCPU;
// --trace FILE: the first world > 1 case's update after its warm-up, every
// rank recording, rank 0 writing the merged Chrome trace (learner/dist/trace_update.h).
std::string g_trace;

// Waits for queued device work so a timer measures it (no-op on CPU).
void SyncDevice() {
  // This rank's GPU: without an index, the thread's current device (cuda:0).
  if (g_device.is_cuda()) torch::cuda::synchronize(g_device.index());
}

struct Config {
  double seconds = 0.5;
  int reps = 3;
  std::vector<std::string> models = {"mlp", "minatar"};
  std::vector<int64_t> batches = {128, 512};
  std::vector<int> worlds = {1, 2};
  bool no_malloc_tuning = false;
  std::string device = "cpu";
  std::string backend = "auto";  // auto: nccl on cuda, gloo on cpu
  std::string param_dtype = "float32";
  std::string reduce_dtype = "float32";
  std::vector<int> prefetch_depths = {lrn::ShardingOptions{}.num_to_forward_prefetch};
  // Intra-op threads of every process (world 1 runs once per entry; ranks
  // of a larger world use the first).
  std::vector<int> threads = {1};
  // --large: full_shard (the models are the case it exists for) and, at
  // world > 1, no_shard: no_shard's ranks hold the whole model and split only
  // the batch, so beside full_shard it separates what sharding saves from
  // what the halved batch per rank saves.
  bool large_variants = false;
  // Internal (--strategy): only this strategy's variants ("" = all), so an
  // isolated case measures one strategy's peak in a fresh process.
  std::string only_strategy;
  // Internal (--throughput-only): updates/s alone, for the scaling rounds: no
  // plain baseline, no compute-alone / comm-alone measurements, 2 settling
  // updates instead of 5.
  bool throughput_only = false;
  // --activation-checkpointing: every unit's forward recomputed in backward
  // (learner.activation_checkpointing).
  bool activation_checkpointing = false;
};

// --large's model: a residual MLP of >= 50 M parameters (models/
// residual_networks.h), one sharding unit per block, the size at which
// sharding has to pay in memory and time. 64 inputs: a vector observation
// of a size a real task might have (the embed layer is a rounding error).
// 512 wide, 96 blocks: 50.6 M parameters in 96 similar units of 0.53 M,
// the shape FSDP is for (what a rank holds beyond its shard scales with the
// unit, the shard with the model). --large-width/--large-blocks change it
// (1024 x 24: the same size in units 4x larger).
int64_t g_large_width = 512;
int64_t g_large_blocks = 96;
// Large enough that an update's compute (~6 x params x batch FLOPs) dwarfs
// its communication (~3 x params x 4 bytes per rank at full_shard).
constexpr int64_t kLargeBatch = 512;
mdl::ResidualMlpOptions LargeMlpOptions() {
  mdl::ResidualMlpOptions o;
  o.input_dim = 64;
  o.width = g_large_width;
  o.blocks = g_large_blocks;
  o.num_actions = 18;
  return o;
}

at::ScalarType DTypeNamed(const std::string& name) {
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float64") return at::kDouble;
  return at::kFloat;
}

mdl::ModelSpec SpecFor(const std::string& model) {
  if (model == "minatar") return mdl::MakeMinAtarSpec({});  // 4 channels, 6 actions
  if (model == "resmlp_large") return mdl::MakeResidualMlpSpec(LargeMlpOptions());
  return mdl::MakeMlpSpec({});  // CartPole 4-64-64-2
}

// The model that warms a process up before its measured cases. For the
// large model a small one of the same layer kinds: freeing a warm-up model
// of 50 M parameters leaves a heap of that size that later allocations walk
// through, faulting in pages they touch once, which then count in the
// measured peak (seen: +400 MB resident at 9 MB more in use).
mdl::ModelSpec WarmUpSpecFor(const std::string& model) {
  if (model != "resmlp_large") return SpecFor(model);
  mdl::ResidualMlpOptions o = LargeMlpOptions();
  o.width = 64;
  o.blocks = 2;
  return mdl::MakeResidualMlpSpec(o);
}

std::string RowModelName(const std::string& model) {
  return model == "mlp" ? "cartpole_mlp" : model;
}

// Plain LibTorch's version of models/residual_networks.h's block:
// x + W2 relu(W1 LN(x) + b1) + b2.
struct PlainResidualBlockImpl : torch::nn::Module {
  explicit PlainResidualBlockImpl(int64_t width)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        fc1(register_module("fc1", torch::nn::Linear(width, width))),
        fc2(register_module("fc2", torch::nn::Linear(width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + fc2(torch::relu(fc1(norm(x)))); }
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(PlainResidualBlock);

torch::nn::Sequential PlainModel(const std::string& model) {
  if (model == "resmlp_large") {
    const mdl::ResidualMlpOptions o = LargeMlpOptions();
    torch::nn::Sequential net(torch::nn::Linear(o.input_dim, o.width));
    for (int64_t b = 0; b < o.blocks; ++b) net->push_back(PlainResidualBlock(o.width));
    net->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.width})));
    net->push_back(torch::nn::Linear(o.width, o.num_actions));
    return net;
  }
  if (model == "minatar") {
    return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 16, 3)),
                                 torch::nn::ReLU(), torch::nn::Flatten(),
                                 torch::nn::Linear(1024, 128), torch::nn::ReLU(),
                                 torch::nn::Linear(128, 6));
  }
  return torch::nn::Sequential(torch::nn::Linear(4, 64), torch::nn::ReLU(),
                               torch::nn::Linear(64, 64), torch::nn::ReLU(),
                               torch::nn::Linear(64, 2));
}

std::pair<torch::Tensor, torch::Tensor> RandomBatch(const mdl::ModelSpec& spec, int64_t batch) {
  std::vector<int64_t> shape = {batch};
  shape.insert(shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  return {torch::rand(shape, g_device), torch::randn({batch, spec.num_actions}, g_device)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Updates per second of `update` over `seconds`, after a warm-up of 5
// updates (or 2 s, at least one, for the large models' seconds-long ones).
template <class F>
double TimeLocal(double seconds, F&& update) {
  const auto warm_start = Clock::now();
  int warm = 0;
  while (warm < 5 && (warm == 0 || Clock::now() - warm_start < std::chrono::seconds(2))) {
    update();
    SyncDevice();
    ++warm;
  }
  const double per_update = std::chrono::duration<double>(Clock::now() - warm_start).count() / warm;
  const int chunk = per_update > 0.25 ? 1 : 4;  // updates between clock reads
  int64_t n = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    for (int i = 0; i < chunk; ++i) update();
    SyncDevice();
    n += chunk;
    now = Clock::now();
  }
  return n / std::chrono::duration<double>(now - start).count();
}

double PlainUpdatesPerSec(const Config& cfg, const std::string& model, int64_t batch) {
  torch::nn::Sequential net = PlainModel(model);
  net->to(g_device);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto [x, y] = RandomBatch(SpecFor(model), batch);
  std::vector<double> reps;
  for (int r = 0; r < cfg.reps; ++r) {
    reps.push_back(TimeLocal(cfg.seconds, [&] {
      opt.zero_grad();
      torch::mse_loss(net->forward(x), y).backward();
      opt.step();
    }));
  }
  return Median(reps);
}

struct Variant {
  lrn::ShardingStrategy strategy;
  lrn::ReduceScatterImpl reduce_scatter = lrn::ReduceScatterImpl::kAuto;
  bool whole_model_unit = false;
  int prefetch = lrn::ShardingOptions{}.num_to_forward_prefetch;  // forward and backward
};

// `v` less the variants of other strategies than --strategy's, if given.
std::vector<Variant> Only(const Config& cfg, std::vector<Variant> v) {
  if (cfg.only_strategy.empty()) return v;
  const lrn::ShardingStrategy keep = lrn::ParseShardingStrategy(cfg.only_strategy);
  v.erase(
      std::remove_if(v.begin(), v.end(), [keep](const Variant& x) { return x.strategy != keep; }),
      v.end());
  return v;
}

// With a group: the default reduce-scatter (the backend's own where it has
// one) and, where that is not already the all-to-all fallback, the fallback
// too, so both show in one run; the all-reduce fallback; the model as one
// unit. full_shard and shard_grad_op once per prefetch depth.
std::vector<Variant> Variants(const Config& cfg, const lrn::Communicator* comm) {
  std::vector<Variant> v;
  for (lrn::ShardingStrategy s :
       {lrn::ShardingStrategy::kFullShard, lrn::ShardingStrategy::kShardGradOp}) {
    for (int depth : cfg.prefetch_depths)
      v.push_back({s, lrn::ReduceScatterImpl::kAuto, false, depth});
    if (cfg.large_variants) {
      if (comm != nullptr && comm->has_group()) v.push_back({lrn::ShardingStrategy::kNoShard});
      return Only(cfg, v);
    }
  }
  v.push_back({lrn::ShardingStrategy::kNoShard});
  if (comm != nullptr && comm->has_group()) {
    if (comm->Resolve(lrn::ReduceScatterImpl::kAuto) != lrn::ReduceScatterImpl::kAllToAll) {
      v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAllToAll});
    }
    v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAllReduce});
    v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAuto, true});
  }
  return Only(cfg, v);
}

lrn::ShardedModelOptions OptionsFor(const Config& cfg, const mdl::ModelSpec& spec,
                                    const Variant& var) {
  lrn::ShardedModelOptions options;
  options.device = g_device;
  options.sharding.strategy = var.strategy;
  options.sharding.reduce_scatter = var.reduce_scatter;
  options.sharding.activation_checkpointing = cfg.activation_checkpointing;
  options.sharding.num_to_forward_prefetch = var.prefetch;
  options.sharding.num_to_backward_prefetch = var.prefetch;
  options.sharding.mixed_precision.param_dtype = DTypeNamed(cfg.param_dtype);
  options.sharding.mixed_precision.reduce_dtype = DTypeNamed(cfg.reduce_dtype);
  if (var.whole_model_unit)
    options.sharding.layers_per_unit = {static_cast<int>(spec.layers.size())};
  return options;
}

// The update's compute alone and communication alone (bench/comm_overlap.h),
// measured at world > 1 unless --throughput-only.
struct OverlapParts {
  rlswarm::bench::ComputeAlone compute;
  rlswarm::bench::CommAlone comm;
};

json Describe(const Config& cfg, const std::string& model, int64_t batch, const Variant& var,
              lrn::ShardedModel& net, double updates_per_sec, int64_t updates,
              int64_t measured_peak_bytes, const std::optional<OverlapParts>& parts = {}) {
  lrn::Communicator& comm = net.communicator();
  comm.CollectDeviceTimings();
  const lrn::CommStats stats = comm.stats();
  const lrn::StateBytes state = net.LocalStateBytes();
  json j;
  j["model"] = RowModelName(model);
  j["params"] = net.spec().Numel();
  j["threads_per_rank"] = at::get_num_threads();
  j["activation_checkpointing"] = cfg.activation_checkpointing;
  j["batch"] = batch;
  j["world_size"] = comm.world_size();
  j["device"] = g_device.str();
  j["backend"] = comm.backend();
  j["strategy"] = lrn::ShardingStrategyName(var.strategy);
  // The reduce-scatter that ran; "none" where gradients are not reduce-
  // scattered (no group, or no_shard's single all-reduce).
  const bool reduce_scatters = comm.has_group() && !net.direct();
  j["reduce_scatter"] =
      reduce_scatters ? lrn::ReduceScatterImplName(comm.Resolve(var.reduce_scatter)) : "none";
  j["param_dtype"] = cfg.param_dtype;
  j["reduce_dtype"] = cfg.reduce_dtype;
  const double n = static_cast<double>(updates);
  j["comm_seconds_per_update"] = stats.busy_seconds / n;
  j["comm_span_union_seconds_per_update"] = stats.span_union_seconds / n;
  j["comm_wait_seconds_per_update"] = stats.wait_seconds / n;
  // What overlap_fraction used to be on the CPU, kept to compare with: it
  // divides by the summed spans, so it is no hidden share.
  j["busy_not_waited_fraction"] =
      stats.busy_seconds > 0 && !g_device.is_cuda()
          ? json(std::clamp(1.0 - stats.wait_seconds / stats.busy_seconds, 0.0, 1.0))
          : json(nullptr);
  j["hidden_fraction"] = nullptr;
  if (parts) {
    j["compute_alone_seconds_per_update"] = parts->compute.Seconds();
    j["compute_alone_forward_backward_seconds"] = parts->compute.forward_backward_seconds;
    j["compute_alone_step_seconds"] = parts->compute.step_seconds;
    j["compute_alone_step_share"] = parts->compute.step_share;
    j["comm_alone_seconds_per_update"] = parts->comm.seconds;
    j["comm_alone_span_union_seconds_per_update"] = parts->comm.span_union_seconds;
    j["comm_alone_collectives_per_update"] = parts->comm.collectives;
    if (stats.collectives > 0) {
      j.update(rlswarm::bench::HiddenShare(1.0 / updates_per_sec, parts->compute.Seconds(),
                                           parts->comm.seconds));
    }
  }
  j["overlap_fraction"] = j["hidden_fraction"];
  j["units"] = net.layouts().size();
  j["updates_per_sec"] = updates_per_sec;
  j["state_bytes_per_rank"] = state.Total();
  j["unsharded_state_bytes"] = net.UnshardedStateBytes().Total();
  // The bench's own iteration-count agreements go through the control plane
  // (ControlAllReduceSum), which CommStats does not count: nothing to take off.
  j["comm_bytes_per_update"] = static_cast<double>(stats.bytes_sent) / updates;
  j["collectives_per_update"] = static_cast<double>(stats.collectives) / updates;
  j["forward_prefetch"] = var.prefetch;
  j["backward_prefetch"] = var.prefetch;
  j["peak_bytes_per_rank"] =
      state.Total() + net.PeakGatheredBytes() + (net.direct() ? 0 : net.LargestUnitBytes());
  j["measured_peak_bytes_per_rank"] = measured_peak_bytes;
  return j;
}

// World 1: plain LibTorch and every variant measured in turn within each
// repetition, so the machine's load (shared, noisy) hits them alike.
json MeasureWorld1(const Config& cfg, const std::string& model, int64_t batch) {
  mdl::ModelSpec spec = SpecFor(model);
  auto [x, y] = RandomBatch(spec, batch);
  {
    // LibTorch's lazily built kernels and pools come up here, not inside the
    // first variant's measured peak: a few updates of the warm-up model,
    // which is small (its freed memory is no pool the measured models
    // could draw on unseen). Plain LibTorch is built after the peaks are
    // read, for the same reason.
    mdl::ModelSpec warm_spec = WarmUpSpecFor(model);
    lrn::ShardedModel warm(warm_spec, OptionsFor(cfg, warm_spec, Variants(cfg, nullptr).front()),
                           nullptr);
    auto [wx, wy] = RandomBatch(warm_spec, batch);
    for (int i = 0; i < 2; ++i) {
      warm.ZeroGrad();
      at::Tensor q = warm.Forward(wx);
      torch::mse_loss(q, wy.to(q.scalar_type())).backward();
      warm.Step();
    }
  }
  std::vector<Variant> variants = Variants(cfg, nullptr);
  std::vector<std::unique_ptr<lrn::ShardedModel>> nets;
  std::vector<int64_t> measured(variants.size(), 0);
  for (size_t v = 0; v < variants.size(); ++v) {
    // Each model's own peak: from just before it is built through a few
    // updates (its steady state: every buffer it uses has been allocated).
    lrn::PeakMemoryMeter meter(g_device);
    nets.push_back(
        std::make_unique<lrn::ShardedModel>(spec, OptionsFor(cfg, spec, variants[v]), nullptr));
    lrn::ShardedModel& net = *nets.back();
    for (int i = 0; i < 3; ++i) {
      net.ZeroGrad();
      at::Tensor q = net.Forward(x);
      torch::mse_loss(q, y.to(q.scalar_type())).backward();
      net.Step();
    }
    SyncDevice();
    measured[v] = meter.PeakBytesAboveBaseline();
  }
  torch::nn::Sequential plain = PlainModel(model);
  plain->to(g_device);
  torch::optim::Adam opt(plain->parameters(), torch::optim::AdamOptions(1e-3));
  auto plain_update = [&, &xx = x, &yy = y] {
    opt.zero_grad();
    torch::mse_loss(plain->forward(xx), yy).backward();
    opt.step();
  };
  std::vector<double> plain_reps;
  std::vector<std::vector<double>> reps(variants.size());
  std::vector<int64_t> counts(variants.size(), 0);
  for (int r = 0; r < cfg.reps; ++r) {
    if (!cfg.throughput_only) plain_reps.push_back(TimeLocal(cfg.seconds, plain_update));
    for (size_t v = 0; v < variants.size(); ++v) {
      lrn::ShardedModel& net = *nets[v];
      reps[v].push_back(TimeLocal(cfg.seconds, [&, &xx = x, &yy = y] {
        net.ZeroGrad();
        at::Tensor q = net.Forward(xx);
        torch::mse_loss(q, yy.to(q.scalar_type())).backward();
        net.Step();
        ++counts[v];
      }));
    }
  }
  json rows = json::array();
  for (size_t v = 0; v < variants.size(); ++v) {
    json row =
        Describe(cfg, model, batch, variants[v], *nets[v], Median(reps[v]), counts[v], measured[v]);
    if (!plain_reps.empty()) row["plain_updates_per_sec"] = Median(plain_reps);
    rows.push_back(row);
  }
  return rows;
}

// World > 1: one variant on this rank; all ranks call it in the same order.
// The iteration count is agreed through an all-reduce (rank 0 decides), so
// every rank issues the same collectives. `side`: a second communicator on
// the same group, for the communication-alone updates (so that `comm`'s
// CommStats count only the measured model's).
json MeasureSharded(const Config& cfg, const std::string& model, int64_t batch, const Variant& var,
                    const std::shared_ptr<lrn::Communicator>& comm,
                    const std::shared_ptr<lrn::Communicator>& side) {
  mdl::ModelSpec spec = SpecFor(model);
  const int world = comm->world_size();
  auto [x, y] = RandomBatch(spec, batch / world);
  // This rank's peak from just before the model is built through its first
  // updates (by then every buffer it uses has been allocated once; the
  // compute-alone model below is built after the peak is read).
  lrn::PeakMemoryMeter meter(g_device);
  lrn::ShardedModel net(spec, OptionsFor(cfg, spec, var), comm);
  auto update = [&, &xx = x, &yy = y] {
    net.ZeroGrad();
    at::Tensor q = net.Forward(xx);
    torch::mse_loss(q, yy.to(q.scalar_type())).backward();
    net.Step();
  };
  for (int i = 0; i < 3; ++i) update();
  SyncDevice();
  const int64_t own_peak = meter.PeakBytesAboveBaseline();
  // The largest over the ranks: each rank writes its own slot of a sum.
  torch::Tensor peaks = torch::zeros({world}, torch::kDouble);
  peaks[comm->rank()] = static_cast<double>(own_peak);
  comm->ControlAllReduceSum(peaks, "measured peaks");
  const auto measured_peak = static_cast<int64_t>(peaks.max().item<double>());
  // The hidden share needs this update's compute alone and its
  // communication alone (bench/comm_overlap.h), on every rank at once, timed
  // once after each repetition's updates: the same minutes of the shared
  // machine as the updates they are set against.
  std::optional<rlswarm::bench::ComputeAloneTimer> compute_alone;
  std::optional<rlswarm::bench::CommAloneTimer> comm_alone;
  if (!cfg.throughput_only) {
    compute_alone.emplace(spec, OptionsFor(cfg, spec, var), x, y,
                          1.0 / static_cast<double>(net.shard_count()));
    comm_alone.emplace(net, side);
  }
  if (!g_trace.empty()) {
    const std::string trace = lrn::TraceOneUpdate(*comm, [&] {
      update();
      return true;
    });
    if (comm->rank() == 0) lrn::WriteTraceFile(g_trace, trace);
    g_trace.clear();
  }
  const int settle = cfg.throughput_only ? 2 : 5;
  for (int i = 0; i < settle; ++i) update();
  // At world > 1, rank 0 also times plain LibTorch on the global batch after
  // each repetition (the other ranks wait in the next iteration-count
  // agreement), so the row's baseline comes from the same minutes as it.
  std::optional<torch::nn::Sequential> plain;
  std::optional<torch::optim::Adam> plain_opt;
  torch::Tensor plain_x, plain_y;
  std::vector<double> plain_reps;
  if (world > 1 && comm->rank() == 0 && !cfg.throughput_only) {
    plain = PlainModel(model);
    (*plain)->to(g_device);
    plain_opt.emplace((*plain)->parameters(), torch::optim::AdamOptions(1e-3));
    std::tie(plain_x, plain_y) = RandomBatch(spec, batch);
  }
  std::vector<double> reps;
  int64_t total_iters = 0;
  net.communicator().ResetStats();
  net.ResetPeak();
  for (int r = 0; r < cfg.reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < settle; ++i) update();
    SyncDevice();
    const double per_iter = std::chrono::duration<double>(Clock::now() - t0).count() / settle;
    torch::Tensor iters =
        torch::tensor({comm->rank() == 0 ? std::max<double>(settle, cfg.seconds / per_iter) : 0.0},
                      torch::kDouble);
    comm->ControlAllReduceSum(iters, "iteration count");
    const int64_t n = static_cast<int64_t>(iters.item<double>());
    t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) update();
    SyncDevice();
    reps.push_back(n / std::chrono::duration<double>(Clock::now() - t0).count());
    total_iters += n + settle;
    if (compute_alone) compute_alone->TimeOne();
    if (comm_alone) comm_alone->TimeOne();
    if (plain) {
      plain_reps.push_back(TimeLocal(cfg.seconds, [&] {
        plain_opt->zero_grad();
        torch::mse_loss((*plain)->forward(plain_x), plain_y).backward();
        plain_opt->step();
      }));
    }
  }
  std::optional<OverlapParts> parts;
  if (compute_alone && comm_alone)
    parts = OverlapParts{compute_alone->Result(), comm_alone->Result()};
  json row = Describe(cfg, model, batch, var, net, Median(reps), total_iters, measured_peak, parts);
  if (!plain_reps.empty()) row["plain_updates_per_sec"] = Median(plain_reps);
  return row;
}

json RunAll(const Config& cfg, const std::shared_ptr<lrn::Communicator>& comm,
            const std::shared_ptr<lrn::Communicator>& side) {
  json rows = json::array();
  // LibTorch's lazily built kernels and pools, and Gloo's first buffers,
  // come up here, not inside the first case's measured peak.
  for (const std::string& model : cfg.models) {
    mdl::ModelSpec spec = WarmUpSpecFor(model);
    lrn::ShardedModel warm(spec, OptionsFor(cfg, spec, Variants(cfg, comm.get()).front()), comm);
    auto [x, y] = RandomBatch(spec, cfg.batches.front() / comm->world_size());
    for (int i = 0; i < 2; ++i) {
      warm.ZeroGrad();
      at::Tensor q = warm.Forward(x);
      torch::mse_loss(q, y.to(q.scalar_type())).backward();
      warm.Step();
    }
  }
  for (const std::string& model : cfg.models) {
    for (int64_t batch : cfg.batches) {
      for (const Variant& v : Variants(cfg, comm.get())) {
        rows.push_back(MeasureSharded(cfg, model, batch, v, comm, side));
      }
    }
  }
  return rows;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// The flags every re-executed process of this binary (a worker rank, an
// isolated case) takes from this one: what it measures and how, beside the
// case-specific ones its caller adds.
std::vector<std::string> ChildFlags(const Config& cfg) {
  std::vector<std::string> args = {"--seconds",      std::to_string(cfg.seconds),
                                   "--reps",         std::to_string(cfg.reps),
                                   "--models",       Join(cfg.models),
                                   "--device",       cfg.device,
                                   "--backend",      cfg.backend,
                                   "--param-dtype",  cfg.param_dtype,
                                   "--reduce-dtype", cfg.reduce_dtype,
                                   "--large-width",  std::to_string(g_large_width),
                                   "--large-blocks", std::to_string(g_large_blocks)};
  if (cfg.large_variants) args.push_back("--large-variants");
  if (!cfg.only_strategy.empty()) args.insert(args.end(), {"--strategy", cfg.only_strategy});
  if (cfg.throughput_only) args.push_back("--throughput-only");
  if (cfg.activation_checkpointing) args.push_back("--activation-checkpointing");
  if (cfg.no_malloc_tuning) args.push_back("--no-malloc-tuning");
  return args;
}

// Spawns `world` worker ranks of this binary; rank 0 writes its rows to a file.
json RunWorld(const Config& cfg, int world) {
  uint16_t port = 0;
  auto store = lrn::HostStore(0, std::chrono::milliseconds(60000), &port);
  const std::string out = "/tmp/learner_bench_" + std::to_string(getpid()) + ".json";
  std::vector<std::string> batches, depths;
  for (int64_t b : cfg.batches) batches.push_back(std::to_string(b));
  for (int d : cfg.prefetch_depths) depths.push_back(std::to_string(d));
  rlswarm::testing::ChildProcessOptions options;
  options.program = "/proc/self/exe";
  std::vector<std::unique_ptr<rlswarm::testing::ChildProcess>> workers;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args = {"learner_bench",
                                     "--worker",
                                     "--rank",
                                     std::to_string(r),
                                     "--world",
                                     std::to_string(world),
                                     "--port",
                                     std::to_string(port),
                                     "--out",
                                     out,
                                     "--batches",
                                     Join(batches),
                                     "--prefetch-depths",
                                     Join(depths),
                                     "--threads",
                                     std::to_string(cfg.threads.front())};
    const std::vector<std::string> shared = ChildFlags(cfg);
    args.insert(args.end(), shared.begin(), shared.end());
    if (!g_trace.empty()) args.insert(args.end(), {"--trace", g_trace});
    workers.push_back(std::make_unique<rlswarm::testing::ChildProcess>(args, options));
  }
  for (auto& worker : workers) {
    // The ranks' own collectives time out after 60 s; this deadline only
    // backs them up (a run measures for minutes, never for a day).
    const std::optional<int> code = worker->Wait(std::chrono::hours(24));
    if (code != 0) throw std::runtime_error("worker failed");  // the others are killed
  }
  std::ifstream f(out);
  json rows = json::parse(f);
  std::remove(out.c_str());
  return rows;
}

// One case (world size, threads, batch, prefetch depth; cfg.only_strategy's
// variants, or all) in a fresh process of this binary: its rows.
json RunCase(const Config& cfg, int world, int threads, int64_t batch, int depth) {
  const std::string out = "/tmp/learner_bench_case_" + std::to_string(getpid()) + ".json";
  std::vector<std::string> args = {"learner_bench",
                                   "--results-file",
                                   out,
                                   "--worlds",
                                   std::to_string(world),
                                   "--threads",
                                   std::to_string(threads),
                                   "--batches",
                                   std::to_string(batch),
                                   "--prefetch-depths",
                                   std::to_string(depth)};
  const std::vector<std::string> shared = ChildFlags(cfg);
  args.insert(args.end(), shared.begin(), shared.end());
  rlswarm::testing::ChildProcessOptions options;
  options.program = "/proc/self/exe";
  options.out = rlswarm::testing::ChildProcessOptions::Sink::kNull;
  rlswarm::testing::ChildProcess child(args, options);
  if (child.Wait(std::chrono::hours(24)) != 0) throw std::runtime_error("case failed");
  std::ifstream f(out);
  json rows = json::parse(f);
  std::remove(out.c_str());
  return rows;
}

// --isolate: every case (world size, batch, threads, prefetch depth, and for
// --large each strategy at world > 1) in a fresh process of this binary, so
// that no case's measured peak holds what an earlier case freed (a
// process's heap keeps freed memory: resident pages do not come back).
// Returns the rows of all of them.
json RunIsolated(const Config& cfg) {
  json rows = json::array();
  for (int world : cfg.worlds) {
    const std::vector<int> threads =
        world == 1 ? cfg.threads : std::vector<int>{cfg.threads.front()};
    // World 1 runs the direct path whatever the strategy: one case.
    std::vector<std::string> strategies = {cfg.only_strategy};
    if (cfg.large_variants && world > 1 && cfg.only_strategy.empty())
      strategies = {"full_shard", "no_shard"};
    for (int t : threads) {
      for (int64_t batch : cfg.batches) {
        for (int depth : cfg.prefetch_depths) {
          for (const std::string& strategy : strategies) {
            Config one = cfg;
            one.only_strategy = strategy;
            for (json& row : RunCase(one, world, t, batch, depth)) rows.push_back(row);
          }
        }
      }
    }
  }
  return rows;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sharded learner core vs plain LibTorch training"};
  Config cfg;
  bool json_out = false, worker = false, no_malloc_tuning = false, large = false, isolate = false;
  std::string results_file;
  int rank = 0, world = 1, port = 0;
  std::string out, models = "mlp,minatar", batches = "128,512", worlds = "1,2";
  std::string depths = std::to_string(cfg.prefetch_depths.front()), threads = "1";
  app.add_flag("--json", json_out, "Print JSON");
  app.add_option("--seconds", cfg.seconds, "Seconds per measurement")->check(CLI::PositiveNumber);
  app.add_option("--reps", cfg.reps, "Measurements per case (median reported)");
  app.add_option("--models", models, "mlp,minatar");
  app.add_option("--batches", batches, "Global batch sizes");
  app.add_option("--worlds", worlds, "World sizes (1, 2)");
  app.add_option("--prefetch-depths", depths,
                 "All-gather prefetch depths (forward = backward) for full_shard and "
                 "shard_grad_op, e.g. 0,1,2");
  app.add_option("--threads", threads,
                 "Intra-op threads per process; world 1 runs once per entry, e.g. 1,2 (larger "
                 "worlds use the first)");
  app.add_flag("--large", large,
               "The >= 50 M parameter cases: resmlp_large (residual MLP, 512 wide, 96 blocks), "
               "world 1 with 1 and 2 threads, world 2 in full_shard and no_shard, then the "
               "checkpoint row; --batches default 512, --seconds 10");
  app.add_option("--large-width", g_large_width, "resmlp_large: width of the residual stream")
      ->check(CLI::PositiveNumber);
  app.add_option("--large-blocks", g_large_blocks, "resmlp_large: residual blocks")
      ->check(CLI::PositiveNumber);
  app.add_flag("--isolate", isolate,
               "Every case (world, batch, threads, prefetch depth) in a fresh process, so no "
               "measured peak holds what an earlier case freed (--large implies it)");
  app.add_flag("--activation-checkpointing", cfg.activation_checkpointing,
               "Recompute every unit's forward in backward (learner.activation_checkpointing)");
  app.add_flag("--large-variants", cfg.large_variants,
               "Internal: only full_shard, and no_shard at world > 1");
  app.add_option("--strategy", cfg.only_strategy, "Internal: only this strategy's variants");
  app.add_flag("--throughput-only", cfg.throughput_only,
               "Internal: updates/s only (no plain baseline, no compute/comm alone)");
  int scaling_rounds = 0;
  app.add_option("--scaling-rounds", scaling_rounds,
                 "Rounds of world 1 (1 and 2 threads) against world 2 (1 thread per rank), each "
                 "case in its own process, order rotated per round (bench/scaling_rounds.h); "
                 "with --large, after its table (for resmlp_large: 3-4 min per round)");
  app.add_option("--results-file", results_file, "Internal: also write the results here");
  app.add_flag("--no-malloc-tuning", no_malloc_tuning,
               "Keep glibc's default of returning large frees to the OS");
  app.add_option("--device", cfg.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--backend", cfg.backend, "auto (nccl on cuda, gloo on cpu), gloo or nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--param-dtype", cfg.param_dtype, "compute dtype of the gathered parameters")
      ->check(CLI::IsMember({"float32", "bfloat16", "float64"}));
  app.add_option("--reduce-dtype", cfg.reduce_dtype, "dtype of the gradients on the wire")
      ->check(CLI::IsMember({"float32", "bfloat16", "float64"}));
  app.add_option("--trace", g_trace,
                 "Chrome trace JSON of one update of the first world > 1 case (rank 0 merges)");
  bool checkpoint = false;
  std::string checkpoint_dir = "/tmp";
  app.add_flag("--checkpoint", checkpoint, "Only the checkpoint case: sync save vs async stall");
  app.add_option("--checkpoint-dir", checkpoint_dir, "Where the checkpoint case writes");
  bool dqn_update = false;
  std::string configs_dir = RLSWARM_CONFIGS_DIR;
  app.add_flag("--dqn-update", dqn_update,
               "Only the dqn_update case: the learner's whole DQN update (world 1) vs the plain "
               "LibTorch update, for CartPole's MLP at batch 128 and MinAtar's net at 64 and 512");
  app.add_option("--configs-dir", configs_dir, "Where the dqn_update case finds configs/");
  app.add_flag("--worker", worker, "Internal: run as one rank");
  app.add_option("--rank", rank, "Internal");
  app.add_option("--world", world, "Internal");
  app.add_option("--port", port, "Internal");
  app.add_option("--out", out, "Internal");
  CLI11_PARSE(app, argc, argv);
  if (large) {
    // Defaults of the large cases; flags given explicitly still win.
    if (app.count("--models") == 0) models = "resmlp_large";
    if (app.count("--batches") == 0) batches = std::to_string(kLargeBatch);
    if (app.count("--threads") == 0) threads = "1,2";
    if (app.count("--seconds") == 0) cfg.seconds = 10;
    cfg.large_variants = true;
    isolate = true;
  }
  cfg.threads.clear();
  for (const std::string& t : Split(threads)) cfg.threads.push_back(std::stoi(t));
  cfg.models = Split(models);
  cfg.no_malloc_tuning = no_malloc_tuning;
  cfg.batches.clear();
  for (const std::string& b : Split(batches)) cfg.batches.push_back(std::stoll(b));
  cfg.worlds.clear();
  for (const std::string& w : Split(worlds)) cfg.worlds.push_back(std::stoi(w));
  cfg.prefetch_depths.clear();
  for (const std::string& d : Split(depths)) cfg.prefetch_depths.push_back(std::stoi(d));
  if (!no_malloc_tuning) {
    // Sharded training frees and re-allocates gathered parameters and
    // full-size gradients every update. With glibc's defaults those blocks
    // are mmapped or trimmed back to the OS and every re-allocation
    // page-faults its memory in again (~0.2 GB/s first touch on this VM,
    // bench/README.md rpc_bench): keep freed memory in the heap instead, as
    // GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=...
    // would. Applies to plain LibTorch alike. Spawned ranks do the same.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  at::set_num_threads(cfg.threads.front());
  torch::manual_seed(0);
  // The same refusals as `rlswarm learner` (CUDA without a CUDA build or a
  // GPU, two ranks on one GPU, a backend that does not fit the device).
  lrn::DevicePlan plan;
  try {
    const int widest = *std::max_element(cfg.worlds.begin(), cfg.worlds.end());
    plan = lrn::PlanDevice(
        {cfg.device, cfg.backend, worker ? rank : widest - 1, worker ? world : widest},
        lrn::ThisProcessInventory());
  } catch (const std::exception& e) {
    std::cerr << "learner_bench: " << e.what() << "\n";
    return 2;
  }
  g_device = plan.device;
  lrn::SetThreadDevice(g_device);
  const std::string asked_backend = cfg.backend;
  cfg.backend = std::string(lrn::BackendName(plan.backend));
  if (plan.backend == lrn::Backend::kNccl) {
    // NCCL's own CUDA-event timing of every collective (comm_seconds_per_update).
    setenv("TORCH_NCCL_ENABLE_TIMING", "1", 0);
    setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", 0);
  }

  if (worker) {
    lrn::RendezvousOptions o;
    o.master_port = static_cast<uint16_t>(port);
    o.rank = rank;
    o.world_size = world;
    o.host_store = false;
    o.gloo_hostname = "127.0.0.1";
    o.backend = plan.backend;
    o.local_rank = rank;
    o.timeout = std::chrono::milliseconds(60000);
    lrn::ProcessGroupHandle pg = lrn::Rendezvous(o);
    auto comm = pg.MakeCommunicator();
    lrn::CheckDistinctDevices(*comm, g_device, "this host");
    comm->set_collect_device_timings(g_device.is_cuda());
    json rows = RunAll(cfg, comm, pg.MakeCommunicator());
    if (rank == 0) std::ofstream(out) << rows.dump();
    return 0;
  }

  if (dqn_update) {  // bench/dqn_update_case.h
    // The learner's periodic metrics line would land in the JSON on stdout.
    spdlog::set_level(spdlog::level::warn);
    const std::vector<std::pair<std::string, int64_t>> cases = {
        {"cartpole.yaml", 128}, {"minatar_breakout.yaml", 64}, {"minatar_breakout.yaml", 512}};
    json rows = json::array();
    for (const auto& [file, batch] : cases) {
      rows.push_back(rlswarm::bench::MeasureDqnUpdate(configs_dir + "/" + file, batch,
                                                      {cfg.seconds, cfg.reps, cfg.device}));
      if (!json_out) std::cout << rows.back().dump() << "\n";
    }
    if (json_out)
      std::cout << json{{"results", rows}, {"torch", lrn::TorchBuildDescription()}}.dump(1) << "\n";
    return 0;
  }

  if (checkpoint) {  // bench/checkpoint_case.h
    json rows = json::array();
    for (const std::string& model : cfg.models) {
      rows.push_back(rlswarm::bench::MeasureCheckpoint(SpecFor(model), model, cfg.batches.front(),
                                                       1, {checkpoint_dir, cfg.reps, cfg.device}));
      if (!json_out) std::cout << rows.back().dump() << "\n";
    }
    if (!results_file.empty()) std::ofstream(results_file) << rows.dump();
    if (json_out)
      std::cout << json{{"results", rows}, {"torch", lrn::TorchBuildDescription()}}.dump(1) << "\n";
    return 0;
  }

  json results = json::array();
  if (isolate) {
    results = RunIsolated(cfg);
    if (large) {
      // The large model's checkpoint row, in a process of its own as well.
      const std::string case_results =
          "/tmp/learner_bench_checkpoint_" + std::to_string(getpid()) + ".json";
      std::vector<std::string> args = {
          "learner_bench",    "--checkpoint", "--batches",      std::to_string(cfg.batches.front()),
          "--checkpoint-dir", checkpoint_dir, "--results-file", case_results};
      Config saves = cfg;
      saves.reps = 2;
      const std::vector<std::string> shared = ChildFlags(saves);
      args.insert(args.end(), shared.begin(), shared.end());
      rlswarm::testing::ChildProcessOptions options;
      options.program = "/proc/self/exe";
      options.out = rlswarm::testing::ChildProcessOptions::Sink::kNull;
      rlswarm::testing::ChildProcess child(args, options);
      if (child.Wait(std::chrono::hours(24)) != 0)
        throw std::runtime_error("checkpoint case failed");
      std::ifstream f(case_results);
      for (json& row : json::parse(f)) results.push_back(row);
      std::remove(case_results.c_str());
    }
    cfg.worlds.clear();  // measured above
  }
  if (scaling_rounds > 0) {
    // Updates/s alone, one short repetition per case: the rounds are the
    // repetitions, and their spread is the figure.
    Config round = cfg;
    round.throughput_only = true;
    round.reps = 1;
    round.only_strategy = "full_shard";
    const json rounds = rlswarm::bench::RunScalingRounds(scaling_rounds, [&](int w, int t) {
      return RunCase(round, w, t, cfg.batches.front(), cfg.prefetch_depths.front())
          .at(0)
          .at("updates_per_sec")
          .get<double>();
    });
    for (const json& row : rounds["results"]) results.push_back(row);
    cfg.worlds.clear();  // without --large, only the rounds
  }
  // Plain LibTorch's updates/s per (model, batch, threads).
  std::map<std::tuple<std::string, int64_t, int>, double> plain;
  for (int w : cfg.worlds) {
    json rows = json::array();
    // World 1 without a group (the learner's plain path), unless a 1-rank
    // NCCL group was asked for (--backend nccl: the sharded path through NCCL).
    if (w == 1 && asked_backend != "nccl") {
      for (int t : cfg.threads) {
        at::set_num_threads(t);
        for (const std::string& model : cfg.models) {
          for (int64_t batch : cfg.batches) {
            for (json& row : MeasureWorld1(cfg, model, batch)) rows.push_back(row);
            if (rows.back().contains("plain_updates_per_sec"))
              plain[{model, batch, t}] = rows.back()["plain_updates_per_sec"].get<double>();
          }
        }
      }
      at::set_num_threads(cfg.threads.front());
    } else {
      rows = RunWorld(cfg, w);
    }
    for (json& row : rows) {
      std::string model = row["model"].get<std::string>();
      if (model == "cartpole_mlp") model = "mlp";
      const auto key =
          std::make_tuple(model, row["batch"].get<int64_t>(), row["threads_per_rank"].get<int>());
      // World > 1 rows bring their own baseline, timed between their
      // repetitions (MeasureSharded); the others take world 1's.
      if (!row.contains("plain_updates_per_sec") && !cfg.throughput_only) {
        if (!plain.count(key)) {
          at::set_num_threads(std::get<2>(key));
          plain[key] = PlainUpdatesPerSec(cfg, model, std::get<1>(key));
          at::set_num_threads(cfg.threads.front());
        }
        row["plain_updates_per_sec"] = plain[key];
      }
      results.push_back(row);
    }
  }
  if (!results_file.empty()) std::ofstream(results_file) << results.dump();
  const std::string blas = mdl::LoadedBlasLibraries();
  if (json_out) {
    std::cout << json{{"results", results},
                      {"torch", lrn::TorchBuildDescription()},
                      {"blas", blas},
                      {"definitions", rlswarm::bench::OverlapDefinitions()},
                      {"malloc_tuned", !no_malloc_tuning},
                      {"resets_high_water_mark", lrn::PeakMemoryMeter().ResetsHighWaterMark()}}
                     .dump(1)
              << "\n";
    return 0;
  }
  std::printf("blas: %s\n", blas.c_str());
  std::printf("%-13s %5s %2s %2s %-14s %-9s %5s %2s %10s %10s %6s %10s %10s %10s %10s %10s\n",
              "model", "batch", "N", "t", "strategy", "rs", "units", "pf", "upd/s", "plain",
              "ratio", "state_B", "unshard_B", "comm_B/upd", "peak_B", "measured_B");
  for (const json& r : results) {
    if (r.contains("case")) {  // the checkpoint row
      std::printf("%s\n", r.dump().c_str());
      continue;
    }
    const double plain_rate = r.value("plain_updates_per_sec", std::nan(""));
    std::printf(
        "%-13s %5ld %2d %2d %-14s %-9s %5d %2d %10.2f %10.2f %6.2f %10ld %10ld %10.0f %10ld "
        "%10ld\n",
        r["model"].get<std::string>().c_str(), r["batch"].get<long>(), r["world_size"].get<int>(),
        r["threads_per_rank"].get<int>(), r["strategy"].get<std::string>().c_str(),
        r["reduce_scatter"].get<std::string>().c_str(), r["units"].get<int>(),
        r["forward_prefetch"].get<int>(), r["updates_per_sec"].get<double>(), plain_rate,
        r["updates_per_sec"].get<double>() / plain_rate, r["state_bytes_per_rank"].get<long>(),
        r["unsharded_state_bytes"].get<long>(), r["comm_bytes_per_update"].get<double>(),
        r["peak_bytes_per_rank"].get<long>(), r["measured_peak_bytes_per_rank"].get<long>());
  }
  return 0;
}
