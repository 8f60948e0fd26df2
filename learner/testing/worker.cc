// The child side of the multi-process tests (see harness.h). Scenarios:
//   equivalence: train every EquivalenceCases() case for kSteps on this
//     rank's share of each global batch; rank 0 writes the gathered
//     parameters to <dir>/<case>.bin, every rank its byte counts to
//     <dir>/<case>.rank<r>.txt.
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
#include "learner/rendezvous.h"
#include "learner/sharded_model.h"
#include "learner/testing/harness.h"

namespace rlswarm::learner::testing {
namespace {

struct WorkerArgs {
  std::string scenario;
  int rank = 0;
  int world_size = 1;
  uint16_t port = 0;
  std::string dir;
};

ProcessGroupHandle Join(const WorkerArgs& a, std::chrono::milliseconds timeout) {
  RendezvousOptions o;
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
    at::Tensor target = y.narrow(0, rank * share, share).to(q.scalar_type());
    model.ZeroGrad();
    (q - target).pow(2).mean().backward();
    model.Step();
  }
}

void Equivalence(const WorkerArgs& a) {
  ProcessGroupHandle pg = Join(a, std::chrono::milliseconds(10000));
  auto comm = std::make_shared<Communicator>(pg.group, a.rank, a.world_size, pg.timeout);
  // Gloo has no reduce_scatter: asking for the native one is a caller error,
  // reported before any collective is issued (so no rank is left waiting).
  int native_rejected = 0;
  try {
    comm->ReduceScatterSum(at::zeros({2 * a.world_size}), ReduceScatterImpl::kNative, "probe");
  } catch (const InvalidArgument&) {
    native_rejected = 1;
  }
  std::ofstream(a.dir + "/native_rs.rank" + std::to_string(a.rank) + ".txt") << native_rejected;
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
    } else if (a.scenario == "die") {
      Die(a, false);
    } else if (a.scenario == "die_in_backward") {
      Die(a, true);
    } else if (a.scenario.rfind("ckpt_", 0) == 0 || a.scenario == "publish" ||
               a.scenario == "dqn_replay") {
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
