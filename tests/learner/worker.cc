// The child side of the multi-process tests (see harness.h). Scenarios:
//   equivalence: train every EquivalenceCases() case for kSteps on this
//     rank's share of each global batch; rank 0 writes the gathered
//     parameters to <dir>/<case>.bin, every rank its byte counts to
//     <dir>/<case>.rank<r>.txt.
//   health: RunHealthScenario (harness.h) on "full_shard_clipped".
//   cuda_primitives, meter_first: RunCudaPrimitivesScenario and
//     RunMeterFirstScenario (harness.h).
//   hybrid: RunHybridScenario (harness.h, hybrid_scenario.cc).
//   die, die_in_backward: rank 1 exits abruptly before step 2's forward
//     (or between its forward and backward); the survivors must fail with a
//     typed error, written to <dir>/rank<r>.err.
// Exit codes: 0 ok, 20 + StatusCode for an rlswarm::Error, 3 otherwise.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/errors.h"
#include "learner/dist/device_plan.h"
#include "learner/dist/rendezvous.h"
#include "learner/fsdp/sharded_model.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner::testing {

void CheckCollectives(Communicator& comm, const std::string& dir, const at::Device& device) {
  const int n = comm.world_size();
  const int r = comm.rank();
  std::ofstream out(dir + "/collectives.rank" + std::to_string(r) + ".txt");
  // Rank q contributes (i mod 5) + q at element i: small integers, so every
  // sum is exact in bfloat16 too.
  auto contribution = [&device](int64_t numel, int q, at::ScalarType dtype) {
    return (at::arange(numel, at::kDouble).remainder(5) + q).to(device, dtype);
  };
  auto sum_over_ranks = [&](int64_t numel, at::ScalarType dtype) {
    at::Tensor s = at::zeros({numel}, at::TensorOptions().dtype(at::kDouble).device(device));
    for (int q = 0; q < n; ++q) s += contribution(numel, q, at::kDouble);
    return s.to(dtype);
  };
  const int64_t k = 7;  // odd, so nothing lines up by accident
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    const std::string t = c10::toString(dtype);
    at::Tensor full = at::empty({k * n}, at::TensorOptions().dtype(dtype).device(device));
    comm.AllGather(contribution(k, r, dtype), full, "all-gather " + t).Wait();
    at::Tensor expected = at::empty({k * n}, at::TensorOptions().dtype(dtype).device(device));
    for (int q = 0; q < n; ++q) expected.narrow(0, q * k, k).copy_(contribution(k, q, dtype));
    out << "allgather_" << t << " " << (at::equal(full, expected) ? "ok" : "wrong") << "\n";
  }
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    const std::string t = c10::toString(dtype);
    for (ReduceScatterImpl impl : {ReduceScatterImpl::kAllToAll, ReduceScatterImpl::kAllReduce,
                                   ReduceScatterImpl::kNative, ReduceScatterImpl::kAuto}) {
      std::string verdict;
      try {
        at::Tensor mine =
            comm.ReduceScatterSum(contribution(k * n, r, dtype), impl, "reduce-scatter " + t);
        verdict =
            at::equal(mine, sum_over_ranks(k * n, dtype).narrow(0, r * k, k)) ? "ok" : "wrong";
      } catch (const InvalidArgument&) {
        verdict = "rejected";  // before anything was issued: no rank is left waiting
      }
      out << "reduce_scatter_" << ReduceScatterImplName(impl) << "_" << t << " " << verdict << "\n";
    }
    std::string verdict;
    try {
      at::Tensor x = contribution(k, r, dtype);
      comm.AllReduceSum(x, "all-reduce " + t).Wait();
      verdict = at::equal(x, sum_over_ranks(k, dtype)) ? "ok" : "wrong";
    } catch (const InvalidArgument&) {
      verdict = "rejected";
    }
    out << "allreduce_" << t << " " << verdict << "\n";
  }
  // Two reductions in flight at once complete in issue order, each with its
  // own buffers.
  PendingReduceScatter first =
      comm.ReduceScatterSumAsync(contribution(k * n, r, at::kFloat), ReduceScatterImpl::kAuto, "a");
  PendingReduceScatter second = comm.ReduceScatterSumAsync(contribution(k * n, r + 1, at::kFloat),
                                                           ReduceScatterImpl::kAuto, "b");
  at::Tensor b = second.Wait();
  at::Tensor a_slice = first.Wait();
  at::Tensor b_expected = sum_over_ranks(k * n, at::kFloat) + static_cast<float>(n);
  out << "two_in_flight "
      << (at::equal(a_slice, sum_over_ranks(k * n, at::kFloat).narrow(0, r * k, k)) &&
                  at::equal(b, b_expected.narrow(0, r * k, k))
              ? "ok"
              : "wrong")
      << "\n";
  at::Tensor flag = at::full({1}, static_cast<double>(r));
  comm.ControlAllReduceSum(flag, "control");
  out << "control_allreduce " << (flag.item<double>() == n * (n - 1) / 2.0 ? "ok" : "wrong")
      << "\n";
  // NCCL's busy time is its device timing, read once the device is done.
  if (comm.stream_ordered()) {
    SyncDevice(device);
    comm.CollectDeviceTimings();
  }
  out << "stats " << (comm.stats().collectives > 0 && comm.stats().busy_seconds > 0 ? "ok" : "none")
      << "\n";
}

namespace {

struct WorkerArgs {
  std::string scenario;
  int rank = 0;
  int world_size = 1;
  uint16_t port = 0;
  std::string dir;
};

ProcessGroupHandle Join(const WorkerArgs& a, std::chrono::milliseconds timeout,
                        Backend backend = Backend::kGloo) {
  RendezvousOptions o;
  o.backend = backend;
  o.local_rank = a.rank;  // one host: rank r on cuda:r
  o.master_addr = "127.0.0.1";
  o.master_port = a.port;
  o.rank = a.rank;
  o.world_size = a.world_size;
  o.timeout = timeout;
  o.host_store = false;  // the parent test hosts it
  o.gloo_hostname = "127.0.0.1";
  return Rendezvous(o);
}

// die_rank_at_step2 exits (no cleanup: a crash) at step 2, before the
// forward or, with die_in_backward, between forward and backward.
void TrainSteps(ShardedModel& model, const models::ModelSpec& spec, int rank, int world,
                int die_rank_at_step2, bool die_in_backward = false) {
  const int64_t share = kGlobalBatch / world;
  for (int step = 0; step < kSteps; ++step) {
    const bool dies = step == 2 && rank == die_rank_at_step2;
    if (dies && !die_in_backward) _exit(7);
    auto [x, y] = GlobalBatch(spec, step);
    at::Tensor q = model.Forward(x.narrow(0, rank * share, share));
    if (dies) _exit(7);
    at::Tensor target = y.narrow(0, rank * share, share).to(q.device(), q.scalar_type());
    model.ZeroGrad();
    (q - target).pow(2).mean().backward();
    model.Step();
  }
}

void Equivalence(const WorkerArgs& a) {
  ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(10000));
  auto comm = std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout);
  CheckCollectives(*comm, a.dir, at::kCPU);
  for (const TrainCase& c : EquivalenceCases()) {
    models::ModelSpec spec = CaseSpec(c.model);
    ShardedModel model(spec, c.options, comm);
    TrainSteps(model, spec, a.rank, a.world_size, -1);
    models::NamedTensors full = model.FullParameters();
    if (a.rank == 0) WriteDoubles(a.dir + "/" + c.name + ".bin", Flatten(full));
    // Padding gradients must stay exactly zero (the norm relies on it).
    double padding_grad = 0;
    for (const UnitLayout& u : model.layouts()) {
      const int64_t valid = u.ValidNumel(model.direct() ? 0 : a.rank);
      if (valid < u.shard_numel) {
        padding_grad += model.LocalGrad()
                            .narrow(0, u.local_offset + valid, u.shard_numel - valid)
                            .abs()
                            .sum()
                            .item<double>();
      }
    }
    // A sharded target network (gather without autograd) must compute what
    // the online model computes, and agree with an inference-only forward.
    int target_ok = 1;
    {
      std::unique_ptr<ShardedModel> target = model.MakeTarget();
      auto [x, y] = GlobalBatch(spec, 0);
      at::Tensor online_q = model.Forward(x).detach();
      at::NoGradGuard no_grad;
      target_ok = at::equal(target->Forward(x), online_q) && at::equal(model.Forward(x), online_q);
    }
    const StateBytes local = model.LocalStateBytes();
    std::ofstream(a.dir + "/" + c.name + ".rank" + std::to_string(a.rank) + ".txt")
        << local.Total() << " " << model.UnshardedStateBytes().Total() << " "
        << model.layouts().size() << " " << padding_grad << " " << target_ok << " "
        << model.PeakGatheredBytes() << "\n";
  }
}

// The equivalence cases that CudaTrainingTest checks, on cuda:<rank> through
// NCCL (a 1-rank NCCL group at world 1).
void CudaEquivalence(const WorkerArgs& a) {
  ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(60000), Backend::kNccl);
  std::shared_ptr<Communicator> comm = pg.MakeCommunicator();
  const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(a.rank));
  CheckDistinctDevices(*comm, device, "this host");
  std::ofstream(a.dir + "/cuda_device.rank" + std::to_string(a.rank) + ".txt")
      << device.str() << " " << comm->backend();
  for (TrainCase c : EquivalenceCases()) {
    if (c.name != "full_shard" && c.name != "shard_grad_op" && c.name != "no_shard" &&
        c.name != "mixed_bf16_compute_f32_master") {
      continue;
    }
    c.options.device = device;
    models::ModelSpec spec = CaseSpec(c.model);
    ShardedModel model(spec, c.options, comm);
    TrainSteps(model, spec, a.rank, a.world_size, -1);
    models::NamedTensors full = model.FullParameters();
    if (a.rank == 0) WriteDoubles(a.dir + "/cuda_" + c.name + ".bin", Flatten(full));
  }
}

void Die(const WorkerArgs& a, bool in_backward) {
  ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(3000));
  auto comm = std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout);
  models::ModelSpec spec = CaseSpec("mlp");
  ShardedModelOptions options;
  ShardedModel model(spec, options, comm);
  TrainSteps(model, spec, a.rank, a.world_size, /*die_rank_at_step2=*/1, in_backward);
}

}  // namespace

int WorkerMain(int argc, char** argv) {
  if (argc < 5) return 2;
  // One intra-op thread per rank: the ranks share two cores.
  at::set_num_threads(1);
  WorkerArgs a{argv[0], std::stoi(argv[1]), std::stoi(argv[2]),
               static_cast<uint16_t>(std::stoi(argv[3])), argv[4]};
  try {
    if (a.scenario == "equivalence") {
      Equivalence(a);
    } else if (a.scenario == "cuda_equivalence") {
      CudaEquivalence(a);
    } else if (a.scenario == "cuda_primitives") {
      // NCCL times its collectives (CUDA events) only when this is set
      // before the group is built.
      setenv("TORCH_NCCL_ENABLE_TIMING", "1", /*overwrite=*/1);
      RunCudaPrimitivesScenario(Join(a, std::chrono::milliseconds(60000), Backend::kNccl), a.dir);
    } else if (a.scenario == "meter_first") {
      RunMeterFirstScenario(a.dir);
    } else if (a.scenario == "health") {
      ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(10000));
      auto comm = std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout);
      for (const TrainCase& c : EquivalenceCases()) {
        if (c.name != "full_shard_clipped") continue;
        ShardedModel model(CaseSpec(c.model), c.options, comm);
        RunHealthScenario(model, a.rank, a.world_size, a.dir);
      }
    } else if (a.scenario == "hybrid") {
      RunHybridScenario(Join(a, std::chrono::milliseconds(10000)), a.dir);
    } else if (a.scenario == "activation_checkpointing" || a.scenario == "trace") {
      ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(10000));
      auto comm = std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout);
      if (a.scenario == "trace") {
        RunTraceScenario(comm, a.rank, a.world_size, a.dir);
      } else {
        RunActivationCheckpointScenario(comm, a.rank, a.world_size, a.dir);
      }
    } else if (a.scenario == "td3") {
      ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(20000));
      RunTd3Scenario(std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout),
                     a.dir);
    } else if (a.scenario == "die") {
      Die(a, false);
    } else if (a.scenario == "die_in_backward") {
      Die(a, true);
    } else if (a.scenario.rfind("async_ckpt_", 0) == 0) {
      RunAsyncCheckpointScenario(a.scenario, Join(a, std::chrono::milliseconds(20000)), a.dir);
    } else if (a.scenario.rfind("watchdog_", 0) == 0) {
      RunWatchdogScenario(a.scenario, a.rank, a.world_size, a.port, a.dir);
    } else if (a.scenario.rfind("ckpt_", 0) == 0 || a.scenario == "publish" ||
               a.scenario.rfind("dqn_", 0) == 0) {
      ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(20000));
      RunDqnScenario(a.scenario,
                     std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout),
                     a.dir);
    } else {
      return 2;
    }
  } catch (const Error& e) {
    std::ofstream(a.dir + "/rank" + std::to_string(a.rank) + ".err")
        << StatusCodeName(e.code()) << ": " << e.what() << "\n";
    // Leave without running the process group's destructors: after a peer
    // died they may wait on Gloo's queue; the test is about the error.
    std::_Exit(20 + static_cast<int>(e.code()));
  } catch (const std::exception& e) {
    std::ofstream(a.dir + "/rank" + std::to_string(a.rank) + ".err") << "untyped: " << e.what();
    std::_Exit(3);
  }
  return 0;
}

}  // namespace rlswarm::learner::testing
