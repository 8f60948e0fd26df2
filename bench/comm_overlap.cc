#include "bench/comm_overlap.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <vector>

namespace rlswarm::bench {
namespace {

namespace lrn = rlswarm::learner;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Sync(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One update's buffers, allocated once so that only the collectives are timed.
struct UnitBuffers {
  at::Tensor shard;  // param dtype, what the all-gather sends
  at::Tensor full;   // param dtype, what it fills
  at::Tensor grad;   // reduce dtype, the reduce-scatter's input
};

// The collectives ShardedModel issues in one update (learner/gathered_units.h
// has the data path): forward all-gathers with the forward prefetch window;
// in backward, under full_shard, the re-gather of every unit but the last
// with the backward window, each unit's reduce-scatter once its gather is
// there, at most 2 of them in flight; then the step's norms all-reduce. The
// direct path (no_shard) all-reduces its whole gradient once.
void OneUpdate(const lrn::ShardedModel& net, lrn::Communicator& comm,
               std::vector<UnitBuffers>& units, at::Tensor& flat_grad, at::Tensor& norms) {
  const lrn::ShardingOptions& o = net.options().sharding;
  if (net.direct()) {
    comm.AllReduceSum(flat_grad, "comm alone: gradient").Wait();
    return;
  }
  const size_t n = units.size();
  std::deque<lrn::PendingCollective> forward;
  for (size_t u = 0; u < n; ++u) {
    forward.push_back(comm.AllGather(units[u].shard, units[u].full, "comm alone: gather"));
    if (forward.size() > static_cast<size_t>(o.num_to_forward_prefetch)) {
      forward.front().Wait();
      forward.pop_front();
    }
  }
  for (auto& g : forward) g.Wait();
  const bool regather = lrn::ReshardsAfterForward(o.strategy);
  std::map<size_t, lrn::PendingCollective> gathers;
  std::deque<lrn::PendingReduceScatter> reductions;
  for (size_t i = 0; i < n; ++i) {
    const size_t u = n - 1 - i;  // backward runs the units in reverse
    if (regather) {
      for (size_t k = 0; k <= static_cast<size_t>(o.num_to_backward_prefetch) && k <= u; ++k) {
        const size_t p = u - k;
        if (p + 1 < n && !gathers.count(p)) {
          gathers[p] = comm.AllGather(units[p].shard, units[p].full, "comm alone: re-gather");
        }
      }
      if (gathers.count(u)) {
        gathers[u].Wait();
        gathers.erase(u);
      }
    }
    reductions.push_back(
        comm.ReduceScatterSumAsync(units[u].grad, o.reduce_scatter, "comm alone: reduce"));
    if (reductions.size() > 2) {
      reductions.front().Wait();
      reductions.pop_front();
    }
  }
  for (auto& r : reductions) r.Wait();
  comm.AllReduceSum(norms, "comm alone: norms").Wait();
}

}  // namespace

ComputeAlone MeasureComputeAlone(const models::ModelSpec& spec,
                                 const lrn::ShardedModelOptions& options, const at::Tensor& x,
                                 const at::Tensor& y, double step_share, int updates) {
  lrn::ShardedModel local(spec, options, nullptr);
  std::vector<double> forward_backward, step;
  for (int i = 0; i <= updates; ++i) {  // the first is a warm-up
    auto t0 = Clock::now();
    local.ZeroGrad();
    at::Tensor q = local.Forward(x);
    torch::mse_loss(q, y.to(q.scalar_type())).backward();
    Sync(options.device);
    const double fb = Since(t0);
    t0 = Clock::now();
    local.Step();
    Sync(options.device);
    if (i == 0) continue;
    forward_backward.push_back(fb);
    step.push_back(Since(t0));
  }
  return {Median(forward_backward), Median(step), step_share};
}

CommAlone MeasureCommAlone(const lrn::ShardedModel& net, lrn::Communicator& comm, int updates) {
  const lrn::ShardingOptions& o = net.options().sharding;
  const at::Device device = net.options().device;
  const at::ScalarType param = o.mixed_precision.param_dtype;
  const at::ScalarType reduce = o.mixed_precision.reduce_dtype;
  std::vector<UnitBuffers> units;
  int64_t flat = 0;
  for (const lrn::UnitLayout& u : net.layouts()) {
    flat += u.padded_numel;
    if (net.direct()) continue;
    units.push_back({at::zeros({u.shard_numel}, at::device(device).dtype(param)),
                     at::zeros({u.padded_numel}, at::device(device).dtype(param)),
                     at::zeros({u.padded_numel}, at::device(device).dtype(reduce))});
  }
  at::Tensor flat_grad =
      net.direct() ? at::zeros({flat}, at::device(device).dtype(reduce)) : at::Tensor();
  at::Tensor norms = at::zeros({4}, at::device(device).dtype(at::kDouble));
  OneUpdate(net, comm, units, flat_grad, norms);  // warm-up
  Sync(device);
  const lrn::CommStats before = comm.stats();
  std::vector<double> seconds;
  for (int i = 0; i < updates; ++i) {
    const auto t0 = Clock::now();
    OneUpdate(net, comm, units, flat_grad, norms);
    Sync(device);
    seconds.push_back(Since(t0));
  }
  const lrn::CommStats& after = comm.stats();
  CommAlone r;
  r.seconds = Median(seconds);
  r.collectives = static_cast<double>(after.collectives - before.collectives) / updates;
  r.bytes_sent = static_cast<double>(after.bytes_sent - before.bytes_sent) / updates;
  r.span_union_seconds = (after.span_union_seconds - before.span_union_seconds) / updates;
  return r;
}

nlohmann::json HiddenShare(double update_seconds, double compute_alone_seconds,
                           double comm_alone_seconds) {
  const double exposed = std::max(0.0, update_seconds - compute_alone_seconds);
  nlohmann::json j;
  j["exposed_comm_seconds_per_update"] = exposed;
  if (comm_alone_seconds > 0) {
    j["hidden_fraction"] = std::clamp(1.0 - exposed / comm_alone_seconds, 0.0, 1.0);
  } else {
    j["hidden_fraction"] = nullptr;
  }
  return j;
}

nlohmann::json OverlapDefinitions() {
  return {
      {"comm_seconds_per_update",
       "sum over the update's collectives of issue-to-completion time (wall clock; NCCL's "
       "CUDA-event time on CUDA); spans that overlap or queue behind each other count once per "
       "collective, so it can exceed the update"},
      {"comm_span_union_seconds_per_update",
       "the union of those spans: wall time at least one collective was in flight (host clocks "
       "only; 0 on CUDA)"},
      {"comm_wait_seconds_per_update", "time the issuing thread was blocked in Wait()"},
      {"compute_alone_seconds_per_update",
       "the rank's update without any collective: forward+backward of a direct-path model on the "
       "rank's local batch plus its optimizer step times the share of parameters the rank steps "
       "(1/world for sharded strategies, 1 for no_shard)"},
      {"comm_alone_seconds_per_update",
       "the update's collectives (same sizes, order, prefetch windows) issued with no compute"},
      {"exposed_comm_seconds_per_update", "max(0, 1/updates_per_sec - compute_alone)"},
      {"hidden_fraction", "1 - exposed / comm_alone, clamped to [0, 1]; null without collectives"},
      {"overlap_fraction", "the same as hidden_fraction (the older key)"},
      {"busy_not_waited_fraction",
       "1 - comm_wait / comm_seconds (the summed spans): what overlap_fraction was on the CPU "
       "before; no hidden share, kept to compare with"}};
}

}  // namespace rlswarm::bench
