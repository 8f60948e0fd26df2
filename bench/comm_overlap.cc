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

}  // namespace

ComputeAloneTimer::ComputeAloneTimer(const models::ModelSpec& spec,
                                     const lrn::ShardedModelOptions& options, at::Tensor x,
                                     at::Tensor y, double step_share)
    : local_(spec, options, nullptr), x_(std::move(x)), y_(std::move(y)), step_share_(step_share) {
  double forward_backward = 0, step = 0;
  Update(&forward_backward, &step);  // warm-up
}

void ComputeAloneTimer::Update(double* forward_backward, double* step) {
  const at::Device device = local_.options().device;
  auto t0 = Clock::now();
  local_.ZeroGrad();
  at::Tensor q = local_.Forward(x_);
  torch::mse_loss(q, y_.to(q.scalar_type())).backward();
  Sync(device);
  *forward_backward = Since(t0);
  t0 = Clock::now();
  local_.Step();
  Sync(device);
  *step = Since(t0);
}

void ComputeAloneTimer::TimeOne() {
  double forward_backward = 0, step = 0;
  Update(&forward_backward, &step);
  forward_backward_.push_back(forward_backward);
  step_.push_back(step);
}

ComputeAlone ComputeAloneTimer::Result() const {
  if (step_.empty()) return {0, 0, step_share_};
  return {Median(forward_backward_), Median(step_), step_share_};
}

CommAloneTimer::CommAloneTimer(const lrn::ShardedModel& net,
                               std::shared_ptr<lrn::Communicator> comm)
    : net_(net), comm_(std::move(comm)) {
  const lrn::ShardingOptions& o = net.options().sharding;
  const at::TensorOptions param =
      at::device(net.options().device).dtype(o.mixed_precision.param_dtype);
  const at::TensorOptions reduce =
      at::device(net.options().device).dtype(o.mixed_precision.reduce_dtype);
  int64_t flat = 0;
  for (const lrn::UnitLayout& u : net.layouts()) {
    flat += u.padded_numel;
    if (net.direct()) continue;
    units_.push_back({at::zeros({u.shard_numel}, param), at::zeros({u.padded_numel}, param),
                      at::zeros({u.padded_numel}, reduce)});
  }
  if (net.direct()) flat_grad_ = at::zeros({flat}, reduce);
  norms_ = at::zeros({4}, at::device(net.options().device).dtype(at::kDouble));
  OneUpdate();  // warm-up
  Sync(net.options().device);
  start_ = comm_->stats();
}

// The collectives ShardedModel issues in one update (learner/gathered_units.h
// has the data path): forward all-gathers with the forward prefetch window;
// in backward, under full_shard, the re-gather of every unit but the last
// with the backward window, each unit's reduce-scatter once its gather is
// there, at most 2 of them in flight; then the step's norms all-reduce. The
// direct path (no_shard) all-reduces its whole gradient once.
void CommAloneTimer::OneUpdate() {
  lrn::Communicator& comm = *comm_;
  const lrn::ShardingOptions& o = net_.options().sharding;
  if (net_.direct()) {
    comm.AllReduceSum(flat_grad_, "comm alone: gradient").Wait();
    return;
  }
  const size_t n = units_.size();
  std::deque<lrn::PendingCollective> forward;
  for (size_t u = 0; u < n; ++u) {
    forward.push_back(comm.AllGather(units_[u].shard, units_[u].full, "comm alone: gather"));
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
          gathers[p] = comm.AllGather(units_[p].shard, units_[p].full, "comm alone: re-gather");
        }
      }
      if (gathers.count(u)) {
        gathers[u].Wait();
        gathers.erase(u);
      }
    }
    reductions.push_back(
        comm.ReduceScatterSumAsync(units_[u].grad, o.reduce_scatter, "comm alone: reduce"));
    if (reductions.size() > 2) {
      reductions.front().Wait();
      reductions.pop_front();
    }
  }
  for (auto& r : reductions) r.Wait();
  comm.AllReduceSum(norms_, "comm alone: norms").Wait();
}

void CommAloneTimer::TimeOne() {
  const auto t0 = Clock::now();
  OneUpdate();
  Sync(net_.options().device);
  seconds_.push_back(Since(t0));
}

CommAlone CommAloneTimer::Result() const {
  if (seconds_.empty()) return {};
  const lrn::CommStats& now = comm_->stats();
  const double n = static_cast<double>(seconds_.size());
  CommAlone r;
  r.seconds = Median(seconds_);
  r.collectives = static_cast<double>(now.collectives - start_.collectives) / n;
  r.bytes_sent = static_cast<double>(now.bytes_sent - start_.bytes_sent) / n;
  r.span_union_seconds = (now.span_union_seconds - start_.span_union_seconds) / n;
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
