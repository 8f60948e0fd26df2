// Table: the three ways to insert and sample (Try, Async, blocking), the
// waiter queues behind them, Close() and Info().

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "replay/table.h"
#include "replay/table_internal.h"

namespace rlswarm::replay {
namespace {

// Where a blocking call waits for its own asynchronous call to complete.
// Shared with the callback, which may run on another thread after the
// blocking call gave up (then nobody reads it).
template <class T>
class SyncSlot {
 public:
  void Set(Result<T> result) {
    {
      MutexLock lock(mu_);
      result_.emplace(std::move(result));
    }
    cv_.NotifyAll();
  }
  // True once set; false if `deadline` passed first.
  bool WaitUntil(Deadline deadline) {
    MutexLock lock(mu_);
    const auto ready = [this]() RLSWARM_REQUIRES(mu_) { return result_.has_value(); };
    if (deadline == kNoDeadline) {
      cv_.Wait(lock, ready);
      return true;
    }
    return cv_.WaitUntil(lock, deadline, ready);
  }
  // Waits for the result and returns its value or throws its error.
  T Take() {
    WaitUntil(kNoDeadline);
    MutexLock lock(mu_);
    return std::move(result_->value());
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::optional<Result<T>> result_ RLSWARM_GUARDED_BY(mu_);
};

template <class T, class Callback>
std::function<void()> Fail(Callback& callback, std::exception_ptr error) {
  return [cb = std::move(callback), error] { cb(Result<T>(error)); };
}

using Keys = std::vector<std::uint64_t>;

}  // namespace

void Table::Run(Completions& done) {
  for (auto& completion : done) completion();
  done.clear();
}

void Table::ServeWaitersLocked(Completions& done) {
  if (insert_waiters_.empty() && sample_waiters_.empty()) return;
  const Deadline now = std::chrono::steady_clock::now();
  std::int64_t num_expired = 0;
  const auto expired = [this, &num_expired] {
    ++num_expired;
    return std::make_exception_ptr(DeadlineExceeded(
        "table '" + initial_options_.name + "': the rate limiter did not admit the call in time"));
  };
  // An insert can admit samples and a sample can admit inserts: go round
  // until neither queue moves.
  bool progress = true;
  while (progress) {
    progress = false;
    while (!insert_waiters_.empty() && limiter_.CanInsert()) {
      InsertWaiter waiter = std::move(insert_waiters_.front());
      insert_waiters_.pop_front();
      if (waiter.deadline <= now) {
        done.push_back(Fail<Keys>(waiter.done, expired()));
        continue;
      }
      try {
        InsertLocked(waiter.insert);
      } catch (...) {
        done.push_back(Fail<Keys>(waiter.done, std::current_exception()));
        continue;
      }
      done.push_back([cb = std::move(waiter.done), keys = std::move(waiter.insert.keys)]() mutable {
        cb(Result<Keys>(std::move(keys)));
      });
      progress = true;
    }
    while (!sample_waiters_.empty() && limiter_.CanSample()) {
      SampleWaiter waiter = std::move(sample_waiters_.front());
      sample_waiters_.pop_front();
      if (waiter.deadline <= now) {
        done.push_back(Fail<SampledBatch>(waiter.done, expired()));
        continue;
      }
      SampleLocked(waiter.request, waiter.batch);
      done.push_back([cb = std::move(waiter.done), batch = std::move(waiter.batch),
                      beta = selector_options_.beta]() mutable {
        FinishBatch(batch, beta);
        cb(Result<SampledBatch>(std::move(batch)));
      });
      progress = true;
    }
  }
  counters_.waiters_expired += num_expired;
}

// --- Insert -----------------------------------------------------------------------

std::optional<std::vector<std::uint64_t>> Table::TryInsert(const InsertBatch& batch) {
  PreparedInsert insert = PrepareInsert(batch);
  Completions done;
  bool inserted = false;
  {
    MutexLock lock(mu_);
    CheckOpenLocked();
    if (insert_waiters_.empty() && limiter_.CanInsert()) {
      InsertLocked(insert);
      inserted = true;
      ServeWaitersLocked(done);
    }
  }
  Run(done);
  if (!inserted) return std::nullopt;
  return std::move(insert.keys);
}

WaiterId Table::InsertAsync(const InsertBatch& batch, Deadline deadline, InsertCallback callback) {
  PreparedInsert insert = PrepareInsert(batch);
  Completions done;
  WaiterId id = 0;
  bool parked = false;
  {
    MutexLock lock(mu_);
    CheckOpenLocked();
    id = next_waiter_id_++;
    if (insert_waiters_.empty() && limiter_.CanInsert()) {
      InsertLocked(insert);
      done.push_back([cb = std::move(callback), keys = std::move(insert.keys)]() mutable {
        cb(Result<Keys>(std::move(keys)));
      });
      ServeWaitersLocked(done);
    } else if (deadline <= std::chrono::steady_clock::now()) {
      done.push_back(Fail<Keys>(
          callback, std::make_exception_ptr(DeadlineExceeded(
                        "table '" + initial_options_.name + "': the rate limiter holds inserts"))));
    } else {
      ++counters_.inserts_waited;
      insert_waiters_.push_back({id, deadline, std::move(insert), std::move(callback)});
      parked = true;
    }
  }
  Run(done);
  if (parked && waiter_parked_hook_) waiter_parked_hook_(deadline);
  return id;
}

std::vector<std::uint64_t> Table::Insert(const InsertBatch& batch, Deadline deadline) {
  auto slot = std::make_shared<SyncSlot<Keys>>();
  const WaiterId id =
      InsertAsync(batch, deadline, [slot](Result<Keys> result) { slot->Set(std::move(result)); });
  if (!slot->WaitUntil(deadline) && CancelWaiter(id)) {
    throw DeadlineExceeded("table '" + initial_options_.name +
                           "': the rate limiter did not admit the insert before its deadline");
  }
  return slot->Take();
}

// --- Sample -----------------------------------------------------------------------

std::optional<SampledBatch> Table::TrySample(const SampleRequest& request) {
  SampledBatch batch = AllocateBatch(request);
  Completions done;
  bool sampled = false;
  double beta = 0;
  {
    MutexLock lock(mu_);
    CheckOpenLocked();
    if (sample_waiters_.empty() && limiter_.CanSample()) {
      SampleLocked(request, batch);
      sampled = true;
      beta = selector_options_.beta;
      ServeWaitersLocked(done);
    }
  }
  Run(done);
  if (!sampled) return std::nullopt;
  FinishBatch(batch, beta);
  return batch;
}

WaiterId Table::SampleAsync(const SampleRequest& request, Deadline deadline,
                            SampleCallback callback) {
  SampledBatch batch = AllocateBatch(request);
  Completions done;
  WaiterId id = 0;
  bool parked = false;
  {
    MutexLock lock(mu_);
    CheckOpenLocked();
    id = next_waiter_id_++;
    if (sample_waiters_.empty() && limiter_.CanSample()) {
      SampleLocked(request, batch);
      done.push_back([cb = std::move(callback), batch = std::move(batch),
                      beta = selector_options_.beta]() mutable {
        FinishBatch(batch, beta);
        cb(Result<SampledBatch>(std::move(batch)));
      });
      ServeWaitersLocked(done);
    } else if (deadline <= std::chrono::steady_clock::now()) {
      done.push_back(Fail<SampledBatch>(
          callback, std::make_exception_ptr(DeadlineExceeded(
                        "table '" + initial_options_.name + "': the rate limiter holds samples"))));
    } else {
      ++counters_.samples_waited;
      sample_waiters_.push_back({id, deadline, request, std::move(batch), std::move(callback)});
      parked = true;
    }
  }
  Run(done);
  if (parked && waiter_parked_hook_) waiter_parked_hook_(deadline);
  return id;
}

SampledBatch Table::Sample(const SampleRequest& request, Deadline deadline) {
  auto slot = std::make_shared<SyncSlot<SampledBatch>>();
  const WaiterId id = SampleAsync(
      request, deadline, [slot](Result<SampledBatch> result) { slot->Set(std::move(result)); });
  if (!slot->WaitUntil(deadline) && CancelWaiter(id)) {
    throw DeadlineExceeded("table '" + initial_options_.name +
                           "': the rate limiter did not admit the sample before its deadline");
  }
  return slot->Take();
}

// --- Waiters ----------------------------------------------------------------------

bool Table::CancelWaiter(WaiterId id) {
  MutexLock lock(mu_);
  const auto match = [id](const auto& waiter) { return waiter.id == id; };
  if (auto it = std::find_if(insert_waiters_.begin(), insert_waiters_.end(), match);
      it != insert_waiters_.end()) {
    insert_waiters_.erase(it);
    return true;
  }
  if (auto it = std::find_if(sample_waiters_.begin(), sample_waiters_.end(), match);
      it != sample_waiters_.end()) {
    sample_waiters_.erase(it);
    return true;
  }
  return false;
}

std::int64_t Table::ExpireWaiters(Deadline now) {
  Completions done;
  {
    MutexLock lock(mu_);
    const auto error = [this](const char* what) {
      return std::make_exception_ptr(DeadlineExceeded("table '" + initial_options_.name +
                                                      "': the rate limiter did not admit the " +
                                                      what + " before its deadline"));
    };
    for (auto it = insert_waiters_.begin(); it != insert_waiters_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      done.push_back(Fail<Keys>(it->done, error("insert")));
      it = insert_waiters_.erase(it);
    }
    for (auto it = sample_waiters_.begin(); it != sample_waiters_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      done.push_back(Fail<SampledBatch>(it->done, error("sample")));
      it = sample_waiters_.erase(it);
    }
    counters_.waiters_expired += static_cast<std::int64_t>(done.size());
  }
  const auto expired = static_cast<std::int64_t>(done.size());
  Run(done);
  return expired;
}

std::optional<Deadline> Table::NextWaiterDeadline() const {
  MutexLock lock(mu_);
  std::optional<Deadline> next;
  const auto consider = [&next](Deadline d) {
    if (d != kNoDeadline && (!next || d < *next)) next = d;
  };
  for (const auto& waiter : insert_waiters_) consider(waiter.deadline);
  for (const auto& waiter : sample_waiters_) consider(waiter.deadline);
  return next;
}

void Table::Close() {
  Completions done;
  {
    MutexLock lock(mu_);
    if (closed_) return;
    closed_ = true;
    const auto error =
        std::make_exception_ptr(Cancelled("table '" + initial_options_.name + "' was closed"));
    for (auto& waiter : insert_waiters_) done.push_back(Fail<Keys>(waiter.done, error));
    for (auto& waiter : sample_waiters_) done.push_back(Fail<SampledBatch>(waiter.done, error));
    insert_waiters_.clear();
    sample_waiters_.clear();
  }
  Run(done);
}

// --- Info -------------------------------------------------------------------------

TableInfo Table::Info() const {
  TableInfo info;
  std::vector<std::int64_t> ages;
  std::vector<std::int64_t> lags;
  {
    MutexLock lock(mu_);
    const std::int64_t now = clock_->NowNanos();
    info.name = initial_options_.name;
    info.size = store_.size();
    info.capacity = store_.capacity();
    info.selector = selector_options_;
    info.max_times_sampled = max_times_sampled_;
    info.counters = counters_;
    info.insert_rate = insert_rate_.PerSecond(now);
    info.sample_rate = sample_rate_.PerSecond(now);
    info.rate_limiter.options = limiter_.options();
    info.rate_limiter.counts = limiter_.counts();
    info.rate_limiter.cursor = limiter_.Cursor();
    info.rate_limiter.can_insert = limiter_.CanInsert();
    info.rate_limiter.can_sample = limiter_.CanSample();
    info.rate_limiter.pending_inserts = static_cast<std::int64_t>(insert_waiters_.size());
    info.rate_limiter.pending_samples = static_cast<std::int64_t>(sample_waiters_.size());
    info.priorities = histogram_;
    info.max_priority = max_priority_;
    ages = staleness_.Ages();
    lags = staleness_.Lags();
    info.staleness.recorded = staleness_.recorded();
    info.next_key_seq = next_seq_;
    info.total_weight = selector_->TotalWeight();
    info.chunks_copied = store_.columns().chunks_copied();
    info.storage_bytes = StorageBytesLocked();
    if (frames_) {
      info.chunks_copied += frames_->chunks_copied();
      info.frames = {.live = frames_->live_frames(),
                     .acquired = frames_->acquired(),
                     .stored = frames_->stored(),
                     .frame_bytes = frames_->frame_bytes(),
                     .memory_bytes = frames_->memory_bytes()};
    }
    info.closed = closed_;
  }
  info.staleness.age_seconds = ComputePercentiles(std::move(ages), 1e-9);
  info.staleness.version_lag = ComputePercentiles(std::move(lags));
  return info;
}

std::size_t Table::StorageBytesLocked() const {
  return store_.columns().allocated_bytes() + (frames_ ? frames_->memory_bytes() : 0);
}

TableTotals Table::Totals() const {
  MutexLock lock(mu_);
  return {limiter_.counts().inserts, limiter_.counts().samples, store_.size(),
          selector_->TotalWeight(), StorageBytesLocked()};
}

}  // namespace rlswarm::replay
