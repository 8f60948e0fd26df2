#pragma once

// Table: one shard of replay. Items of a fixed Signature live column-wise in
// preallocated memory (ItemStore); a Selector picks what a sample draws; a
// RateLimiter holds inserts and samples to a samples-per-insert ratio.
//
// Data path: Insert(batch of N) -> validate every field of every item (no
// lock) -> [lock] wait for the rate limiter -> evict the oldest items if full
// -> copy rows into the columns -> selector -> [unlock]. Sample(B) -> allocate
// the output (no lock) -> [lock] wait for the rate limiter -> B draws, each
// gathering its row of every field into the output -> [unlock] -> IS weights.
//
// Waiting never holds a thread inside the table: a call the rate limiter
// cannot admit becomes a waiter in a FIFO queue, completed by whichever call
// makes it admissible (an insert admits samples and vice versa), by
// ExpireWaiters() once its deadline passes, by CancelWaiter(), or by Close().
// Three flavours use that one mechanism:
//   - Try*: never waits; std::nullopt if the call would wait.
//   - *Async: returns at once; the callback gets the Result later (or inline,
//     before *Async returns, if the call can complete at once). This is what
//     an RPC server with deferred replies uses.
//   - Insert/Sample: blocks the calling thread until done or the deadline.
//
// Thread safety: all public methods are thread safe. One mutex guards the
// table; it is never held while a callback runs, while validating input,
// allocating sample outputs, computing importance weights, sorting staleness
// percentiles, or writing a checkpoint. Lock order: Checkpointer's mutex,
// then Table::mu_. Callbacks run on the thread that completed the call
// (after the table lock is released); they may call the table again, and
// must be quick (e.g. queue a reply).

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/thread_annotations.h"
#include "replay/clock.h"
#include "replay/frame_pool.h"
#include "replay/item_store.h"
#include "replay/rate_limiter.h"
#include "replay/result.h"
#include "replay/selectors/interface.h"
#include "replay/signature.h"
#include "replay/stats.h"
#include "replay/table_types.h"

namespace rlswarm::replay {

class TableSnapshot;

class Table {
 public:
  // Throws InvalidArgument if `options` are invalid. `clock` defaults to the
  // system clock. Allocates all of the table's memory.
  explicit Table(TableOptions options, std::shared_ptr<const Clock> clock = nullptr);
  // Close()s; outstanding TableSnapshots must be gone.
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // --- Inserting ---------------------------------------------------------
  // Every insert first validates the whole batch (InvalidArgument naming the
  // field and why, see ValidateBatch; priorities must be finite and >= 0;
  // N <= capacity) and stores nothing if any item is bad. Items get keys in
  // batch order; when full, the oldest items are evicted first.

  // Blocks until the rate limiter admits the batch. Throws
  // DeadlineExceeded when `deadline` passes first, Cancelled if the table is
  // or gets closed.
  std::vector<std::uint64_t> Insert(const InsertBatch& batch, Deadline deadline = kNoDeadline);
  // Inserts now or returns std::nullopt if the rate limiter would make the
  // call wait (or other inserts wait already: they go first). Throws
  // Cancelled when closed.
  std::optional<std::vector<std::uint64_t>> TryInsert(const InsertBatch& batch);
  // Calls `done` with the keys once inserted, or with DeadlineExceeded /
  // Cancelled. The bytes `batch` points to must stay valid until `done`
  // runs (its FieldView and priority spans are kept, not copied). Throws
  // (and never calls `done`) on invalid input or a closed table.
  WaiterId InsertAsync(const InsertBatch& batch, Deadline deadline, InsertCallback done);

  // --- Sampling ----------------------------------------------------------
  // A sample draws request.batch_size items with replacement in one call
  // (see SampledBatch). Throws InvalidArgument unless 1 <= batch_size <=
  // kMaxSampleBatch.

  // Blocks until the rate limiter admits the sample (which needs at least
  // min_size_to_sample items). Throws DeadlineExceeded or Cancelled.
  SampledBatch Sample(const SampleRequest& request, Deadline deadline = kNoDeadline);
  // Samples now, or std::nullopt if the call would wait.
  std::optional<SampledBatch> TrySample(const SampleRequest& request);
  // Calls `done` with the batch once sampled, or with DeadlineExceeded /
  // Cancelled. Throws (and never calls `done`) on invalid input or a
  // closed table.
  WaiterId SampleAsync(const SampleRequest& request, Deadline deadline, SampleCallback done);

  // --- Waiters -------------------------------------------------------------
  // Removes a waiting *Async call; true if it was still waiting, in which
  // case its callback never runs. False if it completed (or is completing).
  bool CancelWaiter(WaiterId id);
  // Completes every waiter whose deadline is <= now with DeadlineExceeded;
  // returns how many. A server calls this from its poll loop, sleeping until
  // NextWaiterDeadline() at the latest.
  std::int64_t ExpireWaiters(Deadline now = std::chrono::steady_clock::now());
  std::optional<Deadline> NextWaiterDeadline() const;
  // Runs `hook` with the deadline of every *Async call that starts to wait,
  // on the calling thread, outside the table's lock: whoever sleeps until
  // NextWaiterDeadline() learns of an earlier one. Set it before the first
  // *Async call; it must not block.
  void SetWaiterParkedHook(std::function<void(Deadline)> hook) {
    waiter_parked_hook_ = std::move(hook);
  }

  // --- Priorities and configuration ----------------------------------------
  // Sets the priority of each item by key. Every priority must be finite
  // and >= 0 and the spans the same size, else InvalidArgument and nothing
  // changes. Keys of items no longer in the table (evicted, removed by
  // max_times_sampled, never issued) are ignored and counted. A key given
  // twice gets the last priority. Throws Cancelled when closed.
  PriorityUpdateResult UpdatePriorities(std::span<const std::uint64_t> keys,
                                        std::span<const double> priorities);

  // Changes parameters of the live table; the whole change is validated
  // first (InvalidArgument, nothing changes). Lowering max_times_sampled
  // removes the items already sampled that often; a new alpha recomputes
  // every sampling weight (O(capacity) under the lock). Waiters that the new
  // parameters admit complete at once.
  void Reconfigure(const TableReconfig& change);

  // Global-ratio hook (see RateLimiter): the total inserts and samples of
  // every other shard. Waiters that the new counts admit complete at once.
  void SetRemoteCounts(std::int64_t inserts, std::int64_t samples);

  // Counters, rates, rate-limiter state, priority histogram and staleness.
  // O(staleness_window) under the lock; the percentiles are sorted after.
  TableInfo Info() const;
  // Inserts, samples, size and sampling weight, in O(1) under the lock.
  TableTotals Totals() const;

  // Completes every waiter with Cancelled; later inserts, samples, updates
  // and reconfigurations throw Cancelled. Info() and TakeSnapshot() still
  // work, so a shutting-down server can write a last checkpoint. Idempotent.
  void Close();

  // --- Checkpoints (used by checkpoints/) ----------------------------------
  // A consistent copy-on-write view of the whole table, taken in
  // O(columns * chunks) under the lock. Must not outlive the table.
  TableSnapshot TakeSnapshot();
  // Restoring into a table that nothing else uses yet: RestoreRows() copies
  // rows[i] (column-wide) into `slots[i]`; FinishRestore() then takes the
  // live slots, oldest first, whose keys RestoreRows() wrote. Not for a table
  // in service.
  void RestoreRows(std::size_t column, std::span<const std::int64_t> slots,
                   std::span<const std::byte> rows);
  // Restoring a table with frame fields: frame `id` of the pool.
  void RestoreFrame(FrameId id, std::span<const std::byte> frame);
  void FinishRestore(const TableState& state, const std::vector<std::int64_t>& slots);

  const TableOptions& initial_options() const { return initial_options_; }
  const FrameLayout& frame_layout() const { return frame_layout_; }
  const Signature& signature() const { return initial_options_.signature; }

 private:
  friend class TableSnapshot;
  struct PreparedInsert;
  struct InsertWaiter;
  struct SampleWaiter;
  using Completions = std::vector<std::function<void()>>;

  // Validation and allocation, without the lock.
  PreparedInsert PrepareInsert(const InsertBatch& batch) const;
  SampledBatch AllocateBatch(const SampleRequest& request) const;
  // Fills in the IS weights after the lock is released.
  static void FinishBatch(SampledBatch& batch, double beta);

  void CheckOpenLocked() const RLSWARM_REQUIRES(mu_);
  void InsertLocked(PreparedInsert& insert) RLSWARM_REQUIRES(mu_);
  void CopyFieldsLocked(const PreparedInsert& insert) RLSWARM_REQUIRES(mu_);
  void CopyFramesLocked(const PreparedInsert& insert, std::size_t field) RLSWARM_REQUIRES(mu_);
  void SampleLocked(const SampleRequest& request, SampledBatch& batch) RLSWARM_REQUIRES(mu_);
  void RemoveLocked(std::int64_t slot) RLSWARM_REQUIRES(mu_);
  // Runs admitted waiters until none is; queues their callbacks in `done`.
  void ServeWaitersLocked(Completions& done) RLSWARM_REQUIRES(mu_);
  void ReleaseSnapshot() RLSWARM_EXCLUDES(mu_);
  static void Run(Completions& done);

  // Gathers field `field` of the items in drawn_slots_[0, n) into `out`.
  void GatherFieldLocked(std::size_t field, std::int64_t n, std::byte* out) const
      RLSWARM_REQUIRES(mu_);
  // TableInfo::storage_bytes.
  std::size_t StorageBytesLocked() const RLSWARM_REQUIRES(mu_);
  // The frame ids an item's row of frame-stacked field `field` holds.
  std::span<const FrameId> FrameIdsLocked(std::size_t field, std::int64_t slot) const
      RLSWARM_REQUIRES(mu_);

  const TableOptions initial_options_;
  const FrameLayout frame_layout_;
  const std::shared_ptr<const Clock> clock_;

  mutable Mutex mu_;
  bool closed_ RLSWARM_GUARDED_BY(mu_) = false;
  // Live-configurable parameters (initially from the options).
  SelectorOptions selector_options_ RLSWARM_GUARDED_BY(mu_);
  std::int64_t max_times_sampled_ RLSWARM_GUARDED_BY(mu_);

  ItemStore store_ RLSWARM_GUARDED_BY(mu_);
  std::optional<FramePool> frames_ RLSWARM_GUARDED_BY(mu_);  // with frame fields only
  std::unique_ptr<Selector> selector_ RLSWARM_PT_GUARDED_BY(mu_);
  RateLimiter limiter_ RLSWARM_GUARDED_BY(mu_);
  Rng rng_ RLSWARM_GUARDED_BY(mu_);

  std::uint64_t next_seq_ RLSWARM_GUARDED_BY(mu_) = 1;
  double max_priority_ RLSWARM_GUARDED_BY(mu_) = 1.0;  // PER: new items get the max so far
  std::int64_t max_policy_version_ RLSWARM_GUARDED_BY(mu_) = 0;
  TableCounters counters_ RLSWARM_GUARDED_BY(mu_);
  RateMeter insert_rate_ RLSWARM_GUARDED_BY(mu_);
  RateMeter sample_rate_ RLSWARM_GUARDED_BY(mu_);
  StalenessWindow staleness_ RLSWARM_GUARDED_BY(mu_);
  PriorityHistogram histogram_ RLSWARM_GUARDED_BY(mu_);             // of the live items
  std::vector<std::int64_t> drawn_slots_ RLSWARM_GUARDED_BY(mu_);   // SampleLocked's scratch
  std::vector<std::int64_t> insert_slots_ RLSWARM_GUARDED_BY(mu_);  // InsertLocked's scratch
  // The frame ids an insert acquired so far, to release if it fails.
  std::vector<FrameId> acquired_frames_ RLSWARM_GUARDED_BY(mu_);

  WaiterId next_waiter_id_ RLSWARM_GUARDED_BY(mu_) = 1;
  std::list<InsertWaiter> insert_waiters_ RLSWARM_GUARDED_BY(mu_);
  std::list<SampleWaiter> sample_waiters_ RLSWARM_GUARDED_BY(mu_);
  std::function<void(Deadline)> waiter_parked_hook_;  // set before use, then read-only
};

// A consistent view of a table for writing a checkpoint without its lock
// (see ColumnStore). Move-only; releasing it (destruction) takes the table
// lock briefly. Read it from one thread at a time.
class TableSnapshot {
 public:
  TableSnapshot(TableSnapshot&& other) noexcept;
  TableSnapshot& operator=(TableSnapshot&&) = delete;
  ~TableSnapshot();

  const TableState& state() const { return state_; }
  const ColumnStore::Snapshot& columns() const { return columns_; }
  // The frame pool (one column, a row per frame id); empty without frame
  // fields.
  const ColumnStore::Snapshot& frames() const { return frames_; }
  const FrameLayout& frame_layout() const { return table_->frame_layout(); }
  int slot_bits() const { return slot_bits_; }
  std::int64_t capacity() const { return state_.options.capacity; }

 private:
  friend class Table;
  TableSnapshot(Table* table, TableState state, ColumnStore::Snapshot columns,
                ColumnStore::Snapshot frames, int slot_bits)
      : table_(table),
        state_(std::move(state)),
        columns_(std::move(columns)),
        frames_(std::move(frames)),
        slot_bits_(slot_bits) {}

  Table* table_;
  TableState state_;
  ColumnStore::Snapshot columns_;
  ColumnStore::Snapshot frames_;
  int slot_bits_;
};

}  // namespace rlswarm::replay
