// learner_bench: updates per second of the sharded learner core against plain
// LibTorch training of the same model, measured in the same run.
//
//   learner_bench [--json] [--seconds S] [--reps R] [--models mlp,minatar]
//                 [--batches 128,512] [--worlds 1,2] [--device cpu|cuda]
//                 [--backend auto|gloo|nccl] [--param-dtype D] [--reduce-dtype D]
//
// One update = zero grad, forward, MSE against random targets, backward,
// optimizer step (Adam, lr 1e-3) on a fixed random global batch. Plain:
// torch::nn::Sequential + torch::optim::Adam in this process. World 1: a
// ShardedModel without process group (collectives skipped). World 2: two
// ranks re-executed from this binary (`--worker`), Gloo on 127.0.0.1 (or
// NCCL on cuda:<rank> with --device cuda), each rank computing on half of
// the global batch; with --backend nccl world 1 also runs as a 1-rank NCCL
// group (the sharded path through NCCL). Every process uses one intra-op
// thread (the machine has 2 cores). Figures are medians of --reps
// measurements of --seconds each.
//
// JSON: {"results": [{"model", "batch", "world_size", "device", "backend",
//   "strategy", "reduce_scatter", "param_dtype", "reduce_dtype", "units",
//   "updates_per_sec", "plain_updates_per_sec", "state_bytes_per_rank",
//   "unsharded_state_bytes", "comm_bytes_per_update",
//   "collectives_per_update", "comm_seconds_per_update",
//   "overlap_fraction", "peak_bytes_per_rank"}...], "torch": "...",
//   "blas": "...", "malloc_tuned": true}
// reduce_scatter is the implementation that ran: "native" is the backend's
// own (NCCL; Gloo in LibTorch 2.x), "alltoall" and "allreduce" the fallbacks
// that LibTorch 1.13's Gloo needs; on 2.x both native and alltoall rows run.
// comm_seconds_per_update: issue-to-completion time of the collectives (CPU
// wall clock; on CUDA NCCL's own CUDA-event timing). overlap_fraction: the
// share of that hidden behind compute, 1 - (time the rank was blocked
// waiting) / comm time on the CPU; on CUDA, where waiting does not block the
// host, 1 - max(0, update time - the same update's time without
// communication) / comm time. null where nothing was communicated.
// peak_bytes_per_rank = state bytes + most gathered parameter bytes held at
// once + the largest unit's full-size gradient (the reduce-scatter input).

#include <ATen/Parallel.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "learner/device_plan.h"
#include "learner/rendezvous.h"
#include "learner/sharded_model.h"
#include "models/blas_check.h"
#include "models/q_networks.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace lrn = rlswarm::learner;
namespace mdl = rlswarm::models;

// --device: where plain and sharded models run. cuda needs a CUDA LibTorch
// (RLSWARM_WITH_CUDA build); world 2 then uses NCCL, rank r on cuda:r.
torch::Device g_device = torch::kCPU;

// Waits for queued device work so a timer measures it (no-op on CPU).
void SyncDevice() {
  if (g_device.is_cuda()) torch::cuda::synchronize();
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
};

at::ScalarType DTypeNamed(const std::string& name) {
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float64") return at::kDouble;
  return at::kFloat;
}

mdl::ModelSpec SpecFor(const std::string& model) {
  if (model == "minatar") return mdl::MakeMinAtarSpec({});  // 4 channels, 6 actions
  return mdl::MakeMlpSpec({});                              // CartPole 4-64-64-2
}

torch::nn::Sequential PlainModel(const std::string& model) {
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

// Updates per second of `update` over `seconds`, after a warm-up.
template <class F>
double TimeLocal(double seconds, F&& update) {
  for (int i = 0; i < 5; ++i) update();
  SyncDevice();
  int64_t n = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    for (int i = 0; i < 4; ++i) update();
    SyncDevice();
    n += 4;
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
};

// With a group: the default reduce-scatter (the backend's own where it has
// one) and, where that is not already the all-to-all fallback, the fallback
// too, so both show in one run; the all-reduce fallback; the model as one
// unit.
std::vector<Variant> Variants(const lrn::Communicator* comm) {
  std::vector<Variant> v = {{lrn::ShardingStrategy::kFullShard},
                            {lrn::ShardingStrategy::kShardGradOp},
                            {lrn::ShardingStrategy::kNoShard}};
  if (comm != nullptr && comm->has_group()) {
    if (comm->Resolve(lrn::ReduceScatterImpl::kAuto) != lrn::ReduceScatterImpl::kAllToAll) {
      v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAllToAll});
    }
    v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAllReduce});
    v.push_back({lrn::ShardingStrategy::kFullShard, lrn::ReduceScatterImpl::kAuto, true});
  }
  return v;
}

lrn::ShardedModelOptions OptionsFor(const Config& cfg, const mdl::ModelSpec& spec,
                                    const Variant& var) {
  lrn::ShardedModelOptions options;
  options.device = g_device;
  options.sharding.strategy = var.strategy;
  options.sharding.reduce_scatter = var.reduce_scatter;
  options.sharding.mixed_precision.param_dtype = DTypeNamed(cfg.param_dtype);
  options.sharding.mixed_precision.reduce_dtype = DTypeNamed(cfg.reduce_dtype);
  if (var.whole_model_unit)
    options.sharding.layers_per_unit = {static_cast<int>(spec.layers.size())};
  return options;
}

// `compute_only_seconds`: the same update's time without communication (a
// direct-path model on the same local batch), for the CUDA overlap figure.
json Describe(const Config& cfg, const std::string& model, int64_t batch, const Variant& var,
              lrn::ShardedModel& net, double updates_per_sec, int64_t updates,
              int64_t bench_collectives, double compute_only_seconds = 0) {
  lrn::Communicator& comm = net.communicator();
  comm.CollectDeviceTimings();
  const lrn::CommStats stats = comm.stats();
  const lrn::StateBytes state = net.LocalStateBytes();
  json j;
  j["model"] = model == "mlp" ? "cartpole_mlp" : "minatar";
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
  const double comm_s = stats.busy_seconds / static_cast<double>(updates);
  j["comm_seconds_per_update"] = comm_s;
  if (stats.collectives == 0 || comm_s <= 0) {
    j["overlap_fraction"] = nullptr;
  } else if (g_device.is_cuda()) {
    const double exposed = std::max(0.0, 1.0 / updates_per_sec - compute_only_seconds);
    j["overlap_fraction"] = std::clamp(1.0 - exposed / comm_s, 0.0, 1.0);
  } else {
    j["overlap_fraction"] = std::clamp(1.0 - stats.wait_seconds / stats.busy_seconds, 0.0, 1.0);
  }
  j["units"] = net.layouts().size();
  j["updates_per_sec"] = updates_per_sec;
  j["state_bytes_per_rank"] = state.Total();
  j["unsharded_state_bytes"] = net.UnshardedStateBytes().Total();
  // The bench's own iteration-count all-reduces (8 bytes each) are excluded.
  j["comm_bytes_per_update"] =
      static_cast<double>(stats.bytes_sent - bench_collectives * 8) / updates;
  j["collectives_per_update"] =
      static_cast<double>(stats.collectives - bench_collectives) / updates;
  j["peak_bytes_per_rank"] =
      state.Total() + net.PeakGatheredBytes() + (net.direct() ? 0 : net.LargestUnitBytes());
  return j;
}

// World 1: plain LibTorch and every variant measured in turn within each
// repetition, so the machine's load (shared, noisy) hits them alike.
json MeasureWorld1(const Config& cfg, const std::string& model, int64_t batch) {
  mdl::ModelSpec spec = SpecFor(model);
  auto [x, y] = RandomBatch(spec, batch);
  torch::nn::Sequential plain = PlainModel(model);
  plain->to(g_device);
  torch::optim::Adam opt(plain->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<Variant> variants = Variants(nullptr);
  std::vector<std::unique_ptr<lrn::ShardedModel>> nets;
  for (const Variant& v : variants) {
    nets.push_back(std::make_unique<lrn::ShardedModel>(spec, OptionsFor(cfg, spec, v), nullptr));
  }
  std::vector<double> plain_reps;
  std::vector<std::vector<double>> reps(variants.size());
  std::vector<int64_t> counts(variants.size(), 0);
  for (int r = 0; r < cfg.reps; ++r) {
    plain_reps.push_back(TimeLocal(cfg.seconds, [&, &xx = x, &yy = y] {
      opt.zero_grad();
      torch::mse_loss(plain->forward(xx), yy).backward();
      opt.step();
    }));
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
    json row = Describe(cfg, model, batch, variants[v], *nets[v], Median(reps[v]), counts[v], 0);
    row["plain_updates_per_sec"] = Median(plain_reps);
    rows.push_back(row);
  }
  return rows;
}

// World > 1: one variant on this rank; all ranks call it in the same order.
// The iteration count is agreed through an all-reduce (rank 0 decides), so
// every rank issues the same collectives.
json MeasureSharded(const Config& cfg, const std::string& model, int64_t batch, const Variant& var,
                    const std::shared_ptr<lrn::Communicator>& comm) {
  mdl::ModelSpec spec = SpecFor(model);
  lrn::ShardedModel net(spec, OptionsFor(cfg, spec, var), comm);
  const int world = comm->world_size();
  auto [x, y] = RandomBatch(spec, batch / world);
  // On CUDA the overlap figure needs this update's time without any
  // communication: a direct-path model on the same local batch.
  double compute_only_seconds = 0;
  if (g_device.is_cuda()) {
    lrn::ShardedModel local(spec, OptionsFor(cfg, spec, var), nullptr);
    compute_only_seconds = 1.0 / TimeLocal(cfg.seconds, [&, &xx = x, &yy = y] {
                             local.ZeroGrad();
                             at::Tensor q = local.Forward(xx);
                             torch::mse_loss(q, yy.to(q.scalar_type())).backward();
                             local.Step();
                           });
  }
  auto update = [&, &xx = x, &yy = y] {
    net.ZeroGrad();
    at::Tensor q = net.Forward(xx);
    torch::mse_loss(q, yy.to(q.scalar_type())).backward();
    net.Step();
  };
  for (int i = 0; i < 5; ++i) update();
  std::vector<double> reps;
  int64_t total_iters = 0;
  net.communicator().ResetStats();
  net.ResetPeak();
  for (int r = 0; r < cfg.reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < 5; ++i) update();
    SyncDevice();
    const double per_iter = std::chrono::duration<double>(Clock::now() - t0).count() / 5;
    torch::Tensor iters = torch::tensor(
        {comm->rank() == 0 ? std::max(5.0, cfg.seconds / per_iter) : 0.0}, torch::kDouble);
    comm->ControlAllReduceSum(iters, "iteration count");
    const int64_t n = static_cast<int64_t>(iters.item<double>());
    t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) update();
    SyncDevice();
    reps.push_back(n / std::chrono::duration<double>(Clock::now() - t0).count());
    total_iters += n + 5;
  }
  return Describe(cfg, model, batch, var, net, Median(reps), total_iters, cfg.reps,
                  compute_only_seconds);
}

json RunAll(const Config& cfg, const std::shared_ptr<lrn::Communicator>& comm) {
  json rows = json::array();
  for (const std::string& model : cfg.models) {
    for (int64_t batch : cfg.batches) {
      for (const Variant& v : Variants(comm.get())) {
        rows.push_back(MeasureSharded(cfg, model, batch, v, comm));
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

// Spawns `world` worker ranks of this binary; rank 0 writes its rows to a file.
json RunWorld(const Config& cfg, int world) {
  uint16_t port = 0;
  auto store = lrn::HostStore(0, std::chrono::milliseconds(60000), &port);
  const std::string out = "/tmp/learner_bench_" + std::to_string(getpid()) + ".json";
  std::vector<std::string> batches;
  for (int64_t b : cfg.batches) batches.push_back(std::to_string(b));
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args = {"learner_bench", "--worker",
                                     "--rank",        std::to_string(r),
                                     "--world",       std::to_string(world),
                                     "--port",        std::to_string(port),
                                     "--out",         out,
                                     "--seconds",     std::to_string(cfg.seconds),
                                     "--reps",        std::to_string(cfg.reps),
                                     "--models",      Join(cfg.models),
                                     "--batches",     Join(batches)};
    if (cfg.no_malloc_tuning) args.push_back("--no-malloc-tuning");
    for (const auto& [flag, value] : {std::pair<const char*, std::string>{"--device", cfg.device},
                                      {"--backend", cfg.backend},
                                      {"--param-dtype", cfg.param_dtype},
                                      {"--reduce-dtype", cfg.reduce_dtype}}) {
      args.push_back(flag);
      args.push_back(value);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("posix_spawn failed");
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);  // the ranks' own collectives time out after 60 s
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("worker failed");
  }
  std::ifstream f(out);
  json rows = json::parse(f);
  std::remove(out.c_str());
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
  bool json_out = false, worker = false, no_malloc_tuning = false;
  int rank = 0, world = 1, port = 0;
  std::string out, models = "mlp,minatar", batches = "128,512", worlds = "1,2";
  app.add_flag("--json", json_out, "Print JSON");
  app.add_option("--seconds", cfg.seconds, "Seconds per measurement")->check(CLI::PositiveNumber);
  app.add_option("--reps", cfg.reps, "Measurements per case (median reported)");
  app.add_option("--models", models, "mlp,minatar");
  app.add_option("--batches", batches, "Global batch sizes");
  app.add_option("--worlds", worlds, "World sizes (1, 2)");
  app.add_flag("--no-malloc-tuning", no_malloc_tuning,
               "Keep glibc's default of returning large frees to the OS");
  app.add_option("--device", cfg.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--backend", cfg.backend, "auto (nccl on cuda, gloo on cpu), gloo or nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--param-dtype", cfg.param_dtype, "compute dtype of the gathered parameters")
      ->check(CLI::IsMember({"float32", "bfloat16", "float64"}));
  app.add_option("--reduce-dtype", cfg.reduce_dtype, "dtype of the gradients on the wire")
      ->check(CLI::IsMember({"float32", "bfloat16", "float64"}));
  app.add_flag("--worker", worker, "Internal: run as one rank");
  app.add_option("--rank", rank, "Internal");
  app.add_option("--world", world, "Internal");
  app.add_option("--port", port, "Internal");
  app.add_option("--out", out, "Internal");
  CLI11_PARSE(app, argc, argv);
  cfg.models = Split(models);
  cfg.no_malloc_tuning = no_malloc_tuning;
  cfg.batches.clear();
  for (const std::string& b : Split(batches)) cfg.batches.push_back(std::stoll(b));
  cfg.worlds.clear();
  for (const std::string& w : Split(worlds)) cfg.worlds.push_back(std::stoi(w));
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
  at::set_num_threads(1);
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
    json rows = RunAll(cfg, comm);
    if (rank == 0) std::ofstream(out) << rows.dump();
    return 0;
  }

  json results = json::array();
  std::map<std::pair<std::string, int64_t>, double> plain;
  for (int w : cfg.worlds) {
    json rows = json::array();
    if (w == 1 && plan.backend != lrn::Backend::kNccl) {
      for (const std::string& model : cfg.models) {
        for (int64_t batch : cfg.batches) {
          for (json& row : MeasureWorld1(cfg, model, batch)) rows.push_back(row);
          plain[{model, batch}] = rows.back()["plain_updates_per_sec"].get<double>();
        }
      }
    } else {
      rows = RunWorld(cfg, w);
    }
    for (json& row : rows) {
      const std::string model = row["model"] == "minatar" ? "minatar" : "mlp";
      const auto key = std::make_pair(model, row["batch"].get<int64_t>());
      if (!plain.count(key)) plain[key] = PlainUpdatesPerSec(cfg, key.first, key.second);
      row["plain_updates_per_sec"] = plain[key];
      results.push_back(row);
    }
  }
  const std::string blas = mdl::LoadedBlasLibraries();
  if (json_out) {
    std::cout << json{{"results", results},
                      {"torch", lrn::TorchBuildDescription()},
                      {"blas", blas},
                      {"malloc_tuned", !no_malloc_tuning}}
                     .dump(1)
              << "\n";
    return 0;
  }
  std::printf("blas: %s\n", blas.c_str());
  std::printf("%-13s %5s %2s %-14s %-9s %5s %10s %10s %6s %10s %10s %10s %8s\n", "model", "batch",
              "N", "strategy", "rs", "units", "upd/s", "plain", "ratio", "state_B", "unshard_B",
              "comm_B/upd", "peak_B");
  for (const json& r : results) {
    std::printf("%-13s %5ld %2d %-14s %-9s %5d %10.0f %10.0f %6.2f %10ld %10ld %10.0f %8ld\n",
                r["model"].get<std::string>().c_str(), r["batch"].get<long>(),
                r["world_size"].get<int>(), r["strategy"].get<std::string>().c_str(),
                r["reduce_scatter"].get<std::string>().c_str(), r["units"].get<int>(),
                r["updates_per_sec"].get<double>(), r["plain_updates_per_sec"].get<double>(),
                r["updates_per_sec"].get<double>() / r["plain_updates_per_sec"].get<double>(),
                r["state_bytes_per_rank"].get<long>(), r["unsharded_state_bytes"].get<long>(),
                r["comm_bytes_per_update"].get<double>(), r["peak_bytes_per_rank"].get<long>());
  }
  return 0;
}
