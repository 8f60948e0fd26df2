#include "replay/service/replay_sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <set>

#include "common/errors.h"
#include "replay/priority.h"
#include "replay/selectors/prioritized.h"
#include "replay/service/protocol.h"
#include "replay/service/shard_replies.h"

namespace rlswarm::replay {

using Clock = std::chrono::steady_clock;

namespace {

std::chrono::milliseconds Remaining(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

bool IsShardDown(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Unavailable&) {
    return true;
  } catch (...) {
    return false;
  }
}

// Concatenates the parts' batches; probabilities become q_s * P_s(i).
SampledBatch Merge(std::vector<protocol::ShardSample>& parts, const std::vector<double>& q,
                   std::int64_t total_size) {
  SampledBatch out;
  std::size_t n = 0;
  for (const auto& part : parts) n += part.batch.keys.size();
  out.beta = parts.front().batch.beta;
  out.keys.reserve(n);
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const SampledBatch& b = parts[p].batch;
    out.keys.insert(out.keys.end(), b.keys.begin(), b.keys.end());
    out.priorities.insert(out.priorities.end(), b.priorities.begin(), b.priorities.end());
    for (double prob : b.probabilities) out.probabilities.push_back(q[p] * prob);
    out.times_sampled.insert(out.times_sampled.end(), b.times_sampled.begin(),
                             b.times_sampled.end());
    out.policy_versions.insert(out.policy_versions.end(), b.policy_versions.begin(),
                               b.policy_versions.end());
    out.insert_times_ns.insert(out.insert_times_ns.end(), b.insert_times_ns.begin(),
                               b.insert_times_ns.end());
  }
  out.table_sizes.assign(n, std::max<std::int64_t>(total_size, 1));
  const SampledBatch& first = parts.front().batch;
  for (std::size_t f = 0; f < first.fields.size(); ++f) {
    SampledField field;
    field.name = first.fields[f].name;
    field.dtype = first.fields[f].dtype;
    field.shape = first.fields[f].shape;
    field.shape[0] = static_cast<std::int64_t>(n);
    std::size_t bytes = 0;
    for (const auto& part : parts) {
      const SampledBatch& b = part.batch;
      if (b.fields.size() != first.fields.size() || b.fields[f].name != field.name ||
          b.fields[f].dtype != field.dtype) {
        throw FailedPrecondition("replay shards " + std::to_string(parts.front().shard) + " and " +
                                 std::to_string(part.shard) + " have different signatures");
      }
      bytes += b.fields[f].num_bytes;
    }
    field.data = std::shared_ptr<std::byte[]>(new std::byte[bytes]);
    field.num_bytes = bytes;
    std::size_t offset = 0;
    for (const auto& part : parts) {
      const SampledField& src = part.batch.fields[f];
      std::memcpy(field.data.get() + offset, src.data.get(), src.num_bytes);
      offset += src.num_bytes;
    }
    out.fields.push_back(std::move(field));
  }
  out.weights.resize(n);
  ComputeImportanceWeights(out.probabilities, out.table_sizes, out.beta, out.weights);
  return out;
}

}  // namespace

void ReplaySamplerOptions::Validate() const {
  if (endpoints.empty()) throw InvalidArgument("replay sampler: no shard endpoints");
  if (static_cast<int>(endpoints.size()) > protocol::kMaxShards) {
    throw InvalidArgument("replay sampler: more than " + std::to_string(protocol::kMaxShards) +
                          " shards");
  }
  if (timeout.count() <= 0 || totals_max_age.count() < 0 || down_backoff.count() < 0) {
    throw InvalidArgument(
        "replay sampler: timeout must be > 0, totals_max_age and down_backoff >= 0");
  }
}

ReplaySampler::ReplaySampler(ReplaySamplerOptions options)
    : options_(std::move(options)), rng_(options_.seed) {
  options_.Validate();
  for (const std::string& endpoint : options_.endpoints) {
    rpc::ClientOptions client = options_.client;
    client.endpoint = endpoint;
    client.name = "replay-sampler";
    shards_.push_back(std::make_unique<rpc::Client>(client));
  }
  state_.resize(shards_.size());
}

ReplaySampler::~ReplaySampler() = default;

rpc::Client& ReplaySampler::shard(int i) {
  if (i < 0 || i >= num_shards()) {
    throw InvalidArgument("replay shard " + std::to_string(i) + " is not in [0, " +
                          std::to_string(num_shards()) + ")");
  }
  return *shards_[static_cast<std::size_t>(i)];
}

void ReplaySampler::MarkDownLocked(std::size_t s) {
  ShardState& st = state_[s];
  const int doublings = std::min(st.failures_in_a_row, 16);
  const auto backoff =
      std::min(options_.down_backoff * (1 << doublings), options_.down_backoff_max);
  st.down_until = Clock::now() + backoff;
  st.known = false;
  ++st.failures_in_a_row;
  ++stats_.shard_failures;
}

namespace {

// Starts a call to one shard. When it is the only shard asked (`alone`),
// the calling thread waits for it anyway, so it uses Invoke, which drives the
// socket itself while the client is idle (two thread hand-overs fewer than
// Call; see rpc::Client::Invoke) and returns the result as a ready future, so
// the collecting code is the same either way.
std::future<rpc::Reply> StartShardCall(rpc::Client& client, const char* method,
                                       std::vector<Payload> payloads,
                                       const rpc::CallOptions& options, bool alone) {
  if (!alone) return client.Call(method, std::move(payloads), options);
  std::promise<rpc::Reply> promise;
  try {
    promise.set_value(client.Invoke(method, std::move(payloads), options));
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
  return promise.get_future();
}

}  // namespace

void ReplaySampler::MarkUpLocked(std::size_t s, const TableTotals& totals) {
  ShardState& st = state_[s];
  st.totals = totals;
  st.totals_time = Clock::now();
  st.known = true;
  st.failures_in_a_row = 0;
}

void ReplaySampler::RefreshStaleTotals(Clock::time_point deadline) {
  std::vector<std::pair<std::size_t, std::future<rpc::Reply>>> calls;
  {
    MutexLock lock(mu_);
    const auto now = Clock::now();
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      const ShardState& st = state_[s];
      if (st.down_until > now || (st.known && now - st.totals_time <= options_.totals_max_age)) {
        continue;
      }
      const auto timeout = std::min(options_.probe_timeout, Remaining(deadline));
      rpc::CallOptions call{timeout, /*idempotent=*/true};
      calls.emplace_back(s, shards_[s]->Call(protocol::kTotals, {}, call));
    }
  }
  for (auto& [s, future] : calls) {
    try {
      const TableTotals totals = protocol::DecodeTotals(future.get().payloads, 0);
      MutexLock lock(mu_);
      MarkUpLocked(s, totals);
    } catch (const std::exception& e) {
      MutexLock lock(mu_);
      if (state_[s].failures_in_a_row == 0) {
        spdlog::warn("replay sampler: shard {} does not answer ({}); skipping it", s, e.what());
      }
      MarkDownLocked(s);
    }
  }
}

SampledBatch ReplaySampler::Sample(std::int64_t batch_size,
                                   std::optional<std::int64_t> policy_version,
                                   std::optional<std::uint64_t> draw_seed) {
  if (batch_size < 1 || batch_size > kMaxSampleBatch) {
    throw InvalidArgument("replay sampler: batch size " + std::to_string(batch_size) +
                          " is not in [1, " + std::to_string(kMaxSampleBatch) + "]");
  }
  const auto deadline = Clock::now() + options_.timeout;
  RefreshStaleTotals(deadline);
  SampleDraw draw;
  draw.remaining = batch_size;
  draw.policy_version = policy_version;
  draw.draw_seed = draw_seed;
  // With a draw seed the split and every shard's draw come from streams of
  // that seed (see the header), not from rng_ and the shards' own streams.
  std::optional<Rng> split_rng;
  if (draw_seed) split_rng.emplace(DeriveSeed(*draw_seed, 0));
  while (draw.remaining > 0) {
    ++draw.round;  // a new split for the shares of shards that failed
    if (Clock::now() >= deadline) {
      throw DeadlineExceeded("replay sampler: no batch within " +
                             std::to_string(options_.timeout.count()) + " ms");
    }
    const ShardSplit split = SplitAmongShards(draw.remaining, split_rng ? &*split_rng : nullptr);
    CollectParts(split, deadline, draw);
    if (draw.remaining > 0 && Clock::now() >= deadline) {
      throw DeadlineExceeded("replay sampler: no batch within " +
                             std::to_string(options_.timeout.count()) + " ms");
    }
  }
  std::int64_t total_size = 0;
  {
    MutexLock lock(mu_);
    for (const ShardState& st : state_) total_size += st.totals.size;
    ++stats_.batches;
  }
  SampledBatch batch;
  if (num_shards() == 1) {
    batch = std::move(draw.parts.front().batch);  // the shard's own weights are exact
  } else {
    batch = Merge(draw.parts, draw.part_q, total_size);
  }
  MutexLock lock(mu_);
  stats_.items += batch.size();
  return batch;
}

ReplaySampler::ShardSplit ReplaySampler::SplitAmongShards(std::int64_t items, Rng* split_rng) {
  // q_s proportional to the shards' weights (see the header).
  ShardSplit split;
  split.q.assign(shards_.size(), 0.0);
  split.counts.assign(shards_.size(), 0);
  MutexLock lock(mu_);
  const auto now = Clock::now();
  double total = 0;
  for (int pass = 0; pass < 3 && total <= 0; ++pass) {
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      if (state_[s].down_until > now || !state_[s].known) continue;
      split.q[s] = pass == 0   ? state_[s].totals.total_weight
                   : pass == 1 ? static_cast<double>(state_[s].totals.size)
                               : 1.0;  // nothing known: wait on every live shard
      total += split.q[s];
    }
  }
  if (total <= 0) {
    throw Unavailable("replay sampler: none of the " + std::to_string(num_shards()) +
                      " replay shards is up");  // (none answered a probe)
  }
  for (double& v : split.q) v /= total;
  std::size_t last = 0;  // the last shard with weight: where rounding lands
  for (std::size_t s = 0; s < split.q.size(); ++s) {
    if (split.q[s] > 0) last = s;
  }
  for (std::int64_t i = 0; i < items; ++i) {
    const double u = split_rng ? split_rng->Uniform01() : rng_.Uniform01();
    std::size_t chosen = last;
    double cumulative = 0;
    for (std::size_t s = 0; s < split.q.size(); ++s) {
      cumulative += split.q[s];
      if (split.q[s] > 0 && u < cumulative) {
        chosen = s;
        break;
      }
    }
    ++split.counts[chosen];
  }
  return split;
}

void ReplaySampler::CollectParts(const ShardSplit& split, Clock::time_point deadline,
                                 SampleDraw& draw) {
  auto replies = std::make_shared<ShardReplies>();
  std::set<std::size_t> waiting;
  const bool one_shard = std::count_if(split.counts.begin(), split.counts.end(),
                                       [](std::int64_t c) { return c > 0; }) == 1;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    if (split.counts[s] == 0) continue;
    rpc::CallOptions call{Remaining(deadline), /*idempotent=*/false};
    std::vector<Payload> request = protocol::EncodeSampleRequest(
        {split.counts[s], draw.policy_version,
         draw.draw_seed ? std::optional<std::uint64_t>(
                              DeriveSeed(*draw.draw_seed, draw.round * shards_.size() + s + 1))
                        : std::nullopt});
    waiting.insert(s);
    if (one_shard) {  // on this thread: no hand-over to the I/O thread
      try {
        rpc::Reply reply = shards_[s]->Invoke(protocol::kSample, std::move(request), call);
        replies->Deliver(s, &reply, nullptr);
      } catch (...) {
        replies->Deliver(s, nullptr, std::current_exception());
      }
    } else {
      shards_[s]->CallAsync(protocol::kSample, std::move(request), call,
                            [replies, s](rpc::Reply* reply, std::exception_ptr error) {
                              replies->Deliver(s, reply, std::move(error));
                            });
    }
  }
  // Take the parts as they arrive; once one arrived, the others get
  // straggler_timeout.
  std::optional<Clock::time_point> straggler_deadline;
  std::exception_ptr failure;
  while (!waiting.empty()) {
    const Clock::time_point until =
        straggler_deadline ? std::min(deadline, *straggler_deadline) : deadline;
    std::optional<ShardReply> arrived = replies->WaitNext(until);
    if (!arrived) {
      if (Clock::now() < deadline) {
        MutexLock lock(mu_);
        for (std::size_t s : waiting) {
          spdlog::warn(
              "replay sampler: shard {} did not answer within {} ms of the others; "
              "drawing its share elsewhere",
              s, options_.straggler_timeout.count());
          MarkDownLocked(s);  // its late reply is dropped with `replies`
        }
      }
      break;
    }
    const std::size_t s = arrived->shard;
    waiting.erase(s);
    if (!straggler_deadline) straggler_deadline = Clock::now() + options_.straggler_timeout;
    try {
      if (arrived->error) std::rethrow_exception(arrived->error);
      protocol::ShardSample part = protocol::DecodeSampleReply(arrived->reply.payloads);
      if (part.shard != static_cast<int>(s)) {
        throw FailedPrecondition("replay endpoint " + options_.endpoints[s] + " is shard " +
                                 std::to_string(part.shard) + ", expected " + std::to_string(s));
      }
      {
        MutexLock lock(mu_);
        MarkUpLocked(s, part.totals);
      }
      draw.remaining -= split.counts[s];
      draw.part_q.push_back(split.q[s]);
      draw.parts.push_back(std::move(part));
    } catch (...) {
      if (IsShardDown(std::current_exception())) {
        MutexLock lock(mu_);
        MarkDownLocked(s);
        spdlog::warn("replay sampler: shard {} is down; drawing its share elsewhere", s);
      } else if (!failure) {
        failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

PriorityUpdateResult ReplaySampler::UpdatePriorities(std::span<const std::uint64_t> keys,
                                                     std::span<const double> priorities) {
  if (keys.size() != priorities.size()) {
    throw InvalidArgument("update_priorities: " + std::to_string(keys.size()) + " keys but " +
                          std::to_string(priorities.size()) + " priorities");
  }
  CheckPriorities(priorities, "update_priorities: priorities");
  PriorityUpdateResult result;
  std::vector<std::vector<std::uint64_t>> shard_keys(shards_.size());
  std::vector<std::vector<double>> shard_priorities(shards_.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int s = protocol::ShardOfKey(keys[i]);
    if (s >= num_shards()) {
      ++result.ignored;
      continue;
    }
    shard_keys[s].push_back(keys[i]);
    shard_priorities[s].push_back(priorities[i]);
  }
  const auto deadline = Clock::now() + options_.timeout;
  std::vector<std::pair<std::size_t, std::future<rpc::Reply>>> calls;
  const bool one_shard = std::count_if(shard_keys.begin(), shard_keys.end(),
                                       [](const auto& k) { return !k.empty(); }) == 1;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    if (shard_keys[s].empty()) continue;
    rpc::CallOptions call{Remaining(deadline), /*idempotent=*/true};
    calls.emplace_back(
        s, StartShardCall(*shards_[s], protocol::kUpdatePriorities,
                          protocol::EncodePriorityUpdate(shard_keys[s], shard_priorities[s]), call,
                          one_shard));
  }
  std::exception_ptr failure;
  for (auto& [s, future] : calls) {
    try {
      const auto [counts, totals] = protocol::DecodePriorityUpdateReply(future.get().payloads);
      result.updated += counts.updated;
      result.ignored += counts.ignored;
      MutexLock lock(mu_);
      MarkUpLocked(s, totals);
    } catch (const Unavailable&) {
      const auto n = static_cast<std::int64_t>(shard_keys[s].size());
      result.ignored += n;
      MutexLock lock(mu_);
      stats_.priority_updates_lost += n;
    } catch (const DeadlineExceeded&) {
      const auto n = static_cast<std::int64_t>(shard_keys[s].size());
      result.ignored += n;
      MutexLock lock(mu_);
      stats_.priority_updates_lost += n;
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return result;
}

std::vector<TableTotals> ReplaySampler::Totals() {
  {
    MutexLock lock(mu_);
    for (ShardState& st : state_) {
      st.known = false;
      st.down_until = {};
    }
  }
  RefreshStaleTotals(Clock::now() + options_.timeout);
  MutexLock lock(mu_);
  std::vector<TableTotals> totals;
  for (const ShardState& st : state_) totals.push_back(st.totals);
  return totals;
}

rpc::Reply ReplaySampler::CallShard(int s, const char* method, std::vector<Payload> payloads,
                                    bool idempotent) {
  rpc::CallOptions call{options_.timeout, idempotent};
  return shard(s).Invoke(method, std::move(payloads), call);
}

std::string ReplaySampler::Info(int s) {
  rpc::Reply reply = CallShard(s, protocol::kInfo, {}, true);
  if (reply.payloads.size() != 1) throw Internal("info: malformed reply");
  return reply.payloads[0].ToString();
}

std::string ReplaySampler::Checkpoint(int s) {
  rpc::Reply reply = CallShard(s, protocol::kCheckpoint, {}, false);
  if (reply.payloads.size() != 1) throw Internal("checkpoint: malformed reply");
  return reply.payloads[0].ToString();
}

std::string ReplaySampler::Reconfigure(int s, const TableReconfig& change) {
  std::vector<Payload> payloads;
  payloads.push_back(Payload::FromString(protocol::EncodeReconfig(change)));
  rpc::Reply reply = CallShard(s, protocol::kReconfigure, std::move(payloads), true);
  if (reply.payloads.size() != 1) throw Internal("reconfigure: malformed reply");
  return reply.payloads[0].ToString();
}

ReplaySamplerStats ReplaySampler::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace rlswarm::replay
