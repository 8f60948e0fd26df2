#include "replay/service/replay_writer.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "common/errors.h"
#include "replay/priority.h"
#include "replay/service/protocol.h"

namespace rlswarm::replay {

using Clock = std::chrono::steady_clock;

// A sealed batch, encoded once and kept until a shard acknowledges it, so a
// retry resends the same frames.
struct ReplayWriter::Batch {
  std::vector<Payload> payloads;
  std::int64_t items = 0;
};

// The batch being filled: one growing byte buffer per field.
struct ReplayWriter::Staging {
  std::vector<std::vector<std::byte>> columns;
  std::vector<double> priorities;
  std::int64_t items = 0;
  std::int64_t policy_version = 0;
  bool has_priorities = false;
};

namespace {

// A staging buffer holds one full batch of a field.
std::size_t StagingBytes(const ReplayWriterOptions& options, const FieldSpec& field) {
  return static_cast<std::size_t>(options.max_batch_items) * field.ItemBytes();
}

}  // namespace

void ReplayWriterOptions::Validate() const {
  if (endpoints.empty()) throw InvalidArgument("replay writer: no shard endpoints");
  if (static_cast<int>(endpoints.size()) > protocol::kMaxShards) {
    throw InvalidArgument("replay writer: more than " + std::to_string(protocol::kMaxShards) +
                          " shards");
  }
  signature.Validate();
  if (max_batch_items < 1 || max_in_flight < 1 || max_buffered_batches < 1) {
    throw InvalidArgument(
        "replay writer: max_batch_items, max_in_flight and max_buffered_batches must be >= 1");
  }
  if (flush_interval.count() <= 0 || insert_timeout.count() <= 0 || max_block.count() < 0 ||
      retry_backoff.count() < 0) {
    throw InvalidArgument(
        "replay writer: flush_interval and insert_timeout must be > 0, max_block and "
        "retry_backoff >= 0");
  }
}

ReplayWriter::ReplayWriter(ReplayWriterOptions options)
    : options_(std::move(options)), staging_(std::make_unique<Staging>()) {
  options_.Validate();
  for (const std::string& endpoint : options_.endpoints) {
    rpc::ClientOptions client = options_.client;
    client.endpoint = endpoint;
    client.name = "replay-writer";
    shards_.push_back(std::make_unique<rpc::Client>(client));
  }
  down_until_.assign(shards_.size(), Clock::time_point{});
  for (const FieldSpec& field : options_.signature.fields) {
    // Batches in flight, the staging one and a spare.
    pools_.push_back(BufferPool::Create(static_cast<std::size_t>(options_.max_in_flight) + 2));
    staging_->columns.push_back(pools_.back()->Take(StagingBytes(options_, field)));
  }
  timer_ = std::thread([this] { TimerLoop(); });
}

ReplayWriter::~ReplayWriter() { Close(); }

std::int64_t ReplayWriter::Validate(const InsertBatch& items,
                                    std::vector<const std::byte*>& ordered) const {
  const std::int64_t n = ValidateBatch(options_.signature, items.fields, ordered);
  if (!items.priorities.empty()) {
    if (static_cast<std::int64_t>(items.priorities.size()) != n) {
      throw InvalidArgument("replay writer: " + std::to_string(items.priorities.size()) +
                            " priorities for " + std::to_string(n) + " items");
    }
    CheckPriorities(items.priorities, "replay writer: priorities");
  }
  return n;
}

void ReplayWriter::AppendShared(const InsertBatch& items, std::shared_ptr<const void> owner) {
  if (!owner) throw InvalidArgument("replay writer: AppendShared needs an owner");
  std::vector<const std::byte*> ordered;
  const std::int64_t n = Validate(items, ordered);
  auto batch = std::make_shared<Batch>();
  batch->items = n;
  batch->payloads = protocol::EncodeInsertSharing(items, owner);
  MutexLock lock(mu_);
  if (closed_) throw Cancelled("replay writer is closed");
  if (staging_->items > 0) {
    WaitForRoomLocked(lock);
    SealLocked();
  }
  WaitForRoomLocked(lock);
  PushReadyLocked(std::move(batch));
  stats_.items_appended += n;
  std::vector<Dispatch> dispatches = TakeDispatchesLocked();
  lock.Unlock();
  SendAll(std::move(dispatches));
}

void ReplayWriter::Append(const InsertBatch& items) {
  std::vector<const std::byte*> ordered;
  const std::int64_t n = Validate(items, ordered);
  MutexLock lock(mu_);
  if (closed_) throw Cancelled("replay writer is closed");
  Staging& s = *staging_;
  const bool has_priorities = !items.priorities.empty();
  if (s.items > 0 &&
      (s.policy_version != items.policy_version || s.has_priorities != has_priorities)) {
    WaitForRoomLocked(lock);
    SealLocked();  // sent below
  }
  if (s.items == 0) {
    s.policy_version = items.policy_version;
    s.has_priorities = has_priorities;
    staged_since_ = Clock::now();
  }
  const auto& fields = options_.signature.fields;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::size_t bytes = static_cast<std::size_t>(n) * fields[f].ItemBytes();
    s.columns[f].insert(s.columns[f].end(), ordered[f], ordered[f] + bytes);
  }
  s.priorities.insert(s.priorities.end(), items.priorities.begin(), items.priorities.end());
  s.items += n;
  stats_.items_appended += n;
  if (s.items >= options_.max_batch_items) {
    WaitForRoomLocked(lock);
    SealLocked();
  }
  std::vector<Dispatch> dispatches = TakeDispatchesLocked();
  lock.Unlock();
  SendAll(std::move(dispatches));
}

void ReplayWriter::WaitForRoomLocked(MutexLock& lock) {
  // Room for the batch about to be sealed: wait, then (SealLocked) drop the
  // oldest. Only the first seal of an outage waits; later ones drop at once
  // until the buffer drains (an unreachable replay costs the actor one
  // max_block, not one per batch). A rate limiter that holds inserts only
  // makes the actor wait (max_block is long for paced runs), unless it is
  // stopping (StopWaiting).
  auto has_room = [this]() RLSWARM_REQUIRES(mu_) {
    return closed_ || static_cast<std::int64_t>(ready_.size()) < options_.max_buffered_batches;
  };
  if (!has_room() && !dropping_ && !never_wait_) {
    dropping_ = !changed_.WaitFor(lock, options_.max_block, [&]() RLSWARM_REQUIRES(mu_) {
      return has_room() || never_wait_;
    });
  } else if (has_room()) {
    dropping_ = false;
  }
  if (closed_) throw Cancelled("replay writer is closed");
}

void ReplayWriter::SealLocked() {
  Staging& s = *staging_;
  if (s.items == 0) return;
  // The frames take the staging buffers over; the next batch gets pooled
  // ones (warm in cache) of the same capacity.
  auto sealed = std::make_shared<Batch>();
  sealed->items = s.items;
  std::vector<protocol::ColumnBuffer> columns(s.columns.size());
  for (std::size_t f = 0; f < columns.size(); ++f) {
    std::vector<std::byte> next =
        pools_[f]->Take(StagingBytes(options_, options_.signature.fields[f]));
    columns[f] = pools_[f]->Share(std::exchange(s.columns[f], std::move(next)));
  }
  sealed->payloads = protocol::EncodeInsertAdopting(options_.signature, s.items, std::move(columns),
                                                    std::move(s.priorities), s.policy_version);
  PushReadyLocked(std::move(sealed));
  s.priorities = {};
  s.items = 0;
}

void ReplayWriter::PushReadyLocked(std::shared_ptr<Batch> batch) {
  if (static_cast<std::int64_t>(ready_.size()) >= options_.max_buffered_batches) {
    stats_.items_dropped += ready_.front()->items;
    spdlog::warn("replay writer: buffer full ({} batches), dropped the oldest ({} items)",
                 ready_.size(), ready_.front()->items);
    ready_.pop_front();
  }
  ready_.push_back(std::move(batch));
  stats_.buffered = static_cast<std::int64_t>(ready_.size());
}

bool ReplayWriter::HasBatchesToSendLocked() const { return !resend_.empty() || !ready_.empty(); }

int ReplayWriter::PickShardLocked(Clock::time_point now) {
  const int n = static_cast<int>(shards_.size());
  for (int i = 0; i < n; ++i) {
    const int shard = (next_shard_ + i) % n;
    if (down_until_[shard] <= now) {
      next_shard_ = (shard + 1) % n;
      return shard;
    }
  }
  return -1;
}

std::vector<ReplayWriter::Dispatch> ReplayWriter::TakeDispatchesLocked() {
  std::vector<Dispatch> dispatches;
  if (closed_) return dispatches;
  const auto now = Clock::now();
  while (HasBatchesToSendLocked() && stats_.in_flight < options_.max_in_flight) {
    const int shard = PickShardLocked(now);
    if (shard < 0) break;  // all down: the timer resends after retry_backoff
    auto& queue = resend_.empty() ? ready_ : resend_;  // the failed ones first
    dispatches.push_back({std::move(queue.front()), shard});
    queue.pop_front();
    ++stats_.in_flight;
    ++stats_.batches_sent;
  }
  stats_.buffered = static_cast<std::int64_t>(ready_.size());
  stats_.resending = static_cast<std::int64_t>(resend_.size());
  if (!dispatches.empty()) changed_.NotifyAll();  // room for a blocked Append
  return dispatches;
}

void ReplayWriter::SendAll(std::vector<Dispatch> dispatches) {
  for (Dispatch& d : dispatches) Send(std::move(d.batch), d.shard);
}

void ReplayWriter::TimerLoop() {
  MutexLock lock(mu_);
  while (!closed_) {
    const auto now = Clock::now();
    // A full buffer keeps the staged items staged (no drop): the next
    // Append seals them once it has waited for room.
    if (staging_->items > 0 && now - staged_since_ >= options_.flush_interval &&
        static_cast<std::int64_t>(ready_.size()) < options_.max_buffered_batches) {
      SealLocked();
    }
    std::vector<Dispatch> dispatches = TakeDispatchesLocked();
    if (!dispatches.empty()) {
      lock.Unlock();
      SendAll(std::move(dispatches));
      lock.Lock();
      continue;
    }
    Clock::time_point wake = now + options_.flush_interval;
    if (staging_->items > 0) wake = std::min(wake, staged_since_ + options_.flush_interval);
    if (HasBatchesToSendLocked() && stats_.in_flight < options_.max_in_flight) {
      // Every shard is down: wake when the first may be tried again.
      wake = std::min(wake, *std::min_element(down_until_.begin(), down_until_.end()));
    }
    timer_wake_.WaitUntil(lock, wake);
  }
}

void ReplayWriter::Send(std::shared_ptr<Batch> batch, int shard) {
  rpc::CallOptions call;
  call.timeout = options_.insert_timeout;
  std::vector<Payload> payloads = batch->payloads;  // handles: the frames are shared
  shards_[shard]->CallAsync(protocol::kInsert, std::move(payloads), call,
                            [this, batch, shard](rpc::Reply*, std::exception_ptr error) {
                              OnReply(batch, shard, error);
                            });
}

void ReplayWriter::OnReply(std::shared_ptr<Batch> batch, int shard, std::exception_ptr error) {
  bool rejected = false;
  std::string message;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const InvalidArgument& e) {
      rejected = true;
      message = e.what();
    } catch (const FailedPrecondition& e) {
      rejected = true;
      message = e.what();
    } catch (const std::exception& e) {
      message = e.what();
    }
  }
  MutexLock lock(mu_);
  --stats_.in_flight;
  if (!error) {
    stats_.items_acknowledged += batch->items;
  } else if (closed_ || rejected) {
    stats_.items_dropped += batch->items;
    if (rejected) {
      ++stats_.batches_rejected;
      spdlog::error("replay writer: shard {} rejected a batch of {} items: {}", shard, batch->items,
                    message);
    }
  } else {
    // Unavailable, DeadlineExceeded, ...: keep it and try another shard.
    // Kept even when the buffer is full of newer batches: it was counted
    // against the calls in flight (so the buffer plus the calls stay
    // bounded), and dropping it would lose items while the actor is still
    // within max_block (a rate limiter that holds inserts past
    // insert_timeout fails every call in flight).
    down_until_[shard] = Clock::now() + options_.retry_backoff;
    ++stats_.batches_retried;
    spdlog::debug("replay writer: shard {} failed a batch ({}), resending", shard, message);
    resend_.push_back(std::move(batch));
    stats_.resending = static_cast<std::int64_t>(resend_.size());
    timer_wake_.NotifyOne();  // if every shard is down now, it times the resend
  }
  changed_.NotifyAll();
  // The next batch goes from here (this is the rpc client's I/O thread;
  // CallAsync never blocks).
  std::vector<Dispatch> dispatches = TakeDispatchesLocked();
  lock.Unlock();
  SendAll(std::move(dispatches));
}

bool ReplayWriter::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  MutexLock lock(mu_);
  // The staged items wait for room like any batch (the buffer may be full
  // of batches a slow shard has not taken yet): a flush drops nothing
  // before its timeout.
  changed_.WaitUntil(lock, deadline, [this]() RLSWARM_REQUIRES(mu_) {
    return closed_ || static_cast<std::int64_t>(ready_.size()) < options_.max_buffered_batches;
  });
  SealLocked();
  std::vector<Dispatch> dispatches = TakeDispatchesLocked();
  lock.Unlock();
  SendAll(std::move(dispatches));
  lock.Lock();
  return changed_.WaitUntil(lock, deadline, [this]() RLSWARM_REQUIRES(mu_) {
    return closed_ || (!HasBatchesToSendLocked() && stats_.in_flight == 0 && staging_->items == 0);
  }) && !closed_;
}

void ReplayWriter::Close() {
  {
    MutexLock lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  changed_.NotifyAll();
  timer_wake_.NotifyAll();
  if (timer_.joinable()) timer_.join();
  for (auto& shard : shards_) shard->Close();  // pending calls end Cancelled (OnReply counts them)
  MutexLock lock(mu_);
  for (const auto& batch : ready_) stats_.items_dropped += batch->items;
  for (const auto& batch : resend_) stats_.items_dropped += batch->items;
  stats_.items_dropped += staging_->items;
  ready_.clear();
  resend_.clear();
  staging_->items = 0;
  stats_.buffered = 0;
  stats_.resending = 0;
  stats_.staged_items = 0;
}

void ReplayWriter::StopWaiting() {
  {
    MutexLock lock(mu_);
    never_wait_ = true;
  }
  changed_.NotifyAll();
}

ReplayWriterStats ReplayWriter::stats() const {
  MutexLock lock(mu_);
  ReplayWriterStats s = stats_;
  s.staged_items = staging_->items;
  return s;
}

}  // namespace rlswarm::replay
