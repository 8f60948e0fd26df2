#include "replay/table.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.h"
#include "replay/priority.h"
#include "replay/selectors/prioritized.h"
#include "replay/table_internal.h"

namespace rlswarm::replay {

void TableOptions::Validate() const {
  if (name.empty()) throw InvalidArgument("table: name is empty");
  signature.Validate();
  if (capacity < 1 || capacity > (std::int64_t{1} << 32)) {
    throw InvalidArgument("table '" + name + "': capacity must be in [1, 2^32], got " +
                          std::to_string(capacity));
  }
  selector.Validate();
  rate_limiter.Validate();
  if (max_times_sampled < 0) {
    throw InvalidArgument("table '" + name + "': max_times_sampled must be >= 0 (0: unlimited)");
  }
  if (chunk_rows < 1 || chunk_rows > (std::int64_t{1} << 30)) {
    throw InvalidArgument("table '" + name + "': chunk_rows must be in [1, 2^30]");
  }
  if (staleness_window < 1) throw InvalidArgument("table '" + name + "': staleness_window < 1");
  const FrameLayout layout = FrameLayout::Make(signature, frame_fields, name);
  if (capacity * layout.frames_per_item > std::int64_t{0xFFFFFFFF}) {
    throw InvalidArgument("table '" + name + "': capacity " + std::to_string(capacity) + " with " +
                          std::to_string(layout.frames_per_item) +
                          " frames per item exceeds 2^32 frame ids");
  }
}

namespace {

const TableOptions& Validated(const TableOptions& options) {
  options.Validate();
  return options;
}

// Brackets a run of selector changes made under the table lock (see
// Selector::BeginBatch); the selector is consistent again when it ends,
// also if the run throws.
class SelectorBatch {
 public:
  explicit SelectorBatch(Selector& selector) : selector_(selector) { selector_.BeginBatch(); }
  ~SelectorBatch() { selector_.EndBatch(); }
  SelectorBatch(const SelectorBatch&) = delete;
  SelectorBatch& operator=(const SelectorBatch&) = delete;

 private:
  Selector& selector_;
};

std::vector<std::size_t> StoredFieldWidths(const Signature& signature, const FrameLayout& layout) {
  std::vector<std::size_t> widths;
  for (std::size_t f = 0; f < signature.fields.size(); ++f) {
    widths.push_back(layout.RowBytes(signature, f));
  }
  return widths;
}

}  // namespace

Table::Table(TableOptions options, std::shared_ptr<const Clock> clock)
    : initial_options_(Validated(options)),
      frame_layout_(FrameLayout::Make(initial_options_.signature, initial_options_.frame_fields,
                                      initial_options_.name)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      selector_options_(initial_options_.selector),
      max_times_sampled_(initial_options_.max_times_sampled),
      store_(StoredFieldWidths(initial_options_.signature, frame_layout_),
             initial_options_.capacity, initial_options_.chunk_rows),
      selector_(MakeSelector(initial_options_.selector, initial_options_.capacity)),
      limiter_(initial_options_.rate_limiter),
      rng_(initial_options_.seed),
      insert_rate_(clock_->NowNanos()),
      sample_rate_(clock_->NowNanos()),
      staleness_(initial_options_.staleness_window) {
  if (frame_layout_.any()) {
    MutexLock lock(mu_);
    frames_.emplace(frame_layout_.frame_bytes,
                    initial_options_.capacity * frame_layout_.frames_per_item,
                    initial_options_.chunk_rows);
  }
}

Table::~Table() { Close(); }

// --- Validation, without the lock ---------------------------------------------

Table::PreparedInsert Table::PrepareInsert(const InsertBatch& batch) const {
  PreparedInsert prepared;
  prepared.n = ValidateBatch(signature(), batch.fields, prepared.fields);
  if (prepared.n > initial_options_.capacity) {
    throw InvalidArgument("batch of " + std::to_string(prepared.n) +
                          " items exceeds the table capacity " +
                          std::to_string(initial_options_.capacity));
  }
  if (!batch.priorities.empty()) {
    if (static_cast<std::int64_t>(batch.priorities.size()) != prepared.n) {
      throw InvalidArgument("priorities: " + std::to_string(batch.priorities.size()) +
                            " for a batch of " + std::to_string(prepared.n) + " items");
    }
    CheckPriorities(batch.priorities, "priorities");
  }
  prepared.priorities = batch.priorities;
  prepared.policy_version = batch.policy_version;
  prepared.keys.resize(prepared.n);
  if (frame_layout_.any()) {
    const std::size_t frame_bytes = frame_layout_.frame_bytes;
    prepared.frame_hashes.reserve(static_cast<std::size_t>(prepared.n) *
                                  static_cast<std::size_t>(frame_layout_.frames_per_item));
    for (std::int64_t i = 0; i < prepared.n; ++i) {
      for (std::size_t f = 0; f < prepared.fields.size(); ++f) {
        const std::int64_t frames = frame_layout_.frames_per_field[f];
        const std::byte* item =
            prepared.fields[f] + static_cast<std::size_t>(i * frames) * frame_bytes;
        for (std::int64_t j = 0; j < frames; ++j) {
          prepared.frame_hashes.push_back(FramePool::Hash(item + j * frame_bytes, frame_bytes));
        }
      }
    }
  }
  return prepared;
}

SampledBatch Table::AllocateBatch(const SampleRequest& request) const {
  if (request.batch_size < 1 || request.batch_size > kMaxSampleBatch) {
    throw InvalidArgument("sample: batch_size must be in [1, " + std::to_string(kMaxSampleBatch) +
                          "], got " + std::to_string(request.batch_size));
  }
  const auto b = static_cast<std::size_t>(request.batch_size);
  SampledBatch batch;
  batch.keys.resize(b);
  batch.priorities.resize(b);
  batch.probabilities.resize(b);
  batch.table_sizes.resize(b);
  batch.times_sampled.resize(b);
  batch.policy_versions.resize(b);
  batch.insert_times_ns.resize(b);
  for (const FieldSpec& spec : signature().fields) {
    SampledField field;
    field.name = spec.name;
    field.dtype = spec.dtype;
    field.shape.push_back(request.batch_size);
    field.shape.insert(field.shape.end(), spec.shape.begin(), spec.shape.end());
    field.num_bytes = b * spec.ItemBytes();
    field.data = std::make_shared_for_overwrite<std::byte[]>(field.num_bytes);
    batch.fields.push_back(std::move(field));
  }
  return batch;
}

void Table::FinishBatch(SampledBatch& batch, double beta) {
  batch.weights.resize(batch.keys.size());
  batch.beta = beta;
  ComputeImportanceWeights(batch.probabilities, batch.table_sizes, beta, batch.weights);
}

// --- Under the lock -------------------------------------------------------------

void Table::CheckOpenLocked() const {
  if (closed_) throw Cancelled("table '" + initial_options_.name + "' is closed");
}

std::span<const FrameId> Table::FrameIdsLocked(std::size_t field, std::int64_t slot) const {
  return {
      reinterpret_cast<const FrameId*>(store_.columns().Row(ItemStore::FieldColumn(field), slot)),
      static_cast<std::size_t>(frame_layout_.frames_per_field[field])};
}

void Table::RemoveLocked(std::int64_t slot) {
  if (frames_) {
    for (std::size_t f = 0; f < frame_layout_.frames_per_field.size(); ++f) {
      for (const FrameId id : FrameIdsLocked(f, slot)) frames_->Release(id);
    }
  }
  histogram_.Remove(store_.Meta(slot).priority);
  selector_->Remove(slot);
  store_.Free(slot);
  limiter_.OnDeletes(1);
}

void Table::InsertLocked(PreparedInsert& insert) {
  const std::int64_t now = clock_->NowNanos();
  const std::uint64_t seq_limit = std::uint64_t{1} << (64 - store_.slot_bits());
  if (next_seq_ + static_cast<std::uint64_t>(insert.n) >= seq_limit) {
    // Not reachable in practice (2^44 inserts for a capacity of 2^20) but
    // never wrap: a reused key would update the wrong item.
    throw ResourceExhausted("table '" + initial_options_.name + "': key space exhausted");
  }
  const SelectorBatch batch(*selector_);
  insert_slots_.resize(static_cast<std::size_t>(insert.n));
  for (std::int64_t i = 0; i < insert.n; ++i) {
    if (store_.size() == store_.capacity()) {
      RemoveLocked(store_.Oldest());
      ++counters_.evicted;
    }
    const std::uint64_t seq = next_seq_++;
    const double priority = insert.priorities.empty() ? max_priority_ : insert.priorities[i];
    const std::int64_t slot = store_.Allocate(
        seq,
        {.priority = priority, .insert_time_ns = now, .policy_version = insert.policy_version});
    insert_slots_[i] = slot;
    selector_->Insert(slot, priority);
    histogram_.Add(priority);
    max_priority_ = std::max(max_priority_, priority);
    insert.keys[i] = store_.MakeKey(seq, slot);
  }
  try {
    acquired_frames_.clear();
    acquired_frames_.reserve(static_cast<std::size_t>(insert.n * frame_layout_.frames_per_item));
    CopyFieldsLocked(insert);
  } catch (...) {
    // Out of memory mid-batch (a chunk's allocation or copy-on-write copy):
    // the batch is not stored. Its slots go back without releasing what
    // their rows hold (stale or partial ids); the frames acquired for it are
    // released one by one. Items evicted for it stay evicted.
    if (frames_) {
      for (const FrameId id : acquired_frames_) frames_->Release(id);
    }
    for (std::int64_t i = 0; i < insert.n; ++i) {
      histogram_.Remove(store_.Meta(insert_slots_[i]).priority);
      selector_->Remove(insert_slots_[i]);
      store_.Free(insert_slots_[i]);
    }
    throw;
  }
  max_policy_version_ = std::max(max_policy_version_, insert.policy_version);
  limiter_.OnInserts(insert.n);
  counters_.inserted += insert.n;
  insert_rate_.Add(insert.n, now);
}

// Field by field, one memcpy per run of consecutive slots in one chunk: a
// table that evicts in FIFO order hands out consecutive slots, so a batch is
// usually one or two runs, not n * fields small copies.
void Table::CopyFieldsLocked(const PreparedInsert& insert) {
  ColumnStore& columns = store_.columns();
  const std::size_t num_fields = signature().fields.size();
  const std::int64_t chunk_rows = columns.chunk_rows();
  for (std::size_t f = 0; f < num_fields; ++f) {
    const std::size_t column = ItemStore::FieldColumn(f);
    const std::size_t width = columns.width(column);
    if (frame_layout_.shared(f)) {
      CopyFramesLocked(insert, f);
      continue;
    }
    std::int64_t i = 0;
    while (i < insert.n) {
      const std::int64_t first = insert_slots_[i];
      std::int64_t run = 1;
      while (i + run < insert.n && insert_slots_[i + run] == first + run &&
             (first + run) % chunk_rows != 0) {
        ++run;
      }
      std::memcpy(columns.MutableRow(column, first),
                  insert.fields[f] + static_cast<std::size_t>(i) * width,
                  static_cast<std::size_t>(run) * width);
      i += run;
    }
  }
}

// Each frame of field `f` of every item: the id of an equal stored frame,
// or of a new copy, into the item's row.
void Table::CopyFramesLocked(const PreparedInsert& insert, std::size_t f) {
  const std::size_t frame_bytes = frame_layout_.frame_bytes;
  const std::int64_t frames = frame_layout_.frames_per_field[f];
  for (std::int64_t i = 0; i < insert.n; ++i) {
    auto* ids = reinterpret_cast<FrameId*>(
        store_.columns().MutableRow(ItemStore::FieldColumn(f), insert_slots_[i]));
    const std::byte* item = insert.fields[f] + static_cast<std::size_t>(i * frames) * frame_bytes;
    const std::uint64_t* hashes = insert.frame_hashes.data() + i * frame_layout_.frames_per_item +
                                  frame_layout_.first_frame_of_field[f];
    for (std::int64_t j = 0; j < frames; ++j) {
      ids[j] = frames_->Acquire(item + j * frame_bytes, hashes[j]);
      acquired_frames_.push_back(ids[j]);
    }
  }
}

void Table::SampleLocked(const SampleRequest& request, SampledBatch& batch) {
  assert(store_.size() > 0);
  const std::int64_t now = clock_->NowNanos();
  const std::int64_t version = request.policy_version.value_or(max_policy_version_);
  if (static_cast<std::int64_t>(drawn_slots_.size()) < request.batch_size) {
    drawn_slots_.resize(static_cast<std::size_t>(request.batch_size));
  }
  const auto& fields = signature().fields;
  std::optional<Rng> seeded;
  if (request.seed) seeded.emplace(*request.seed);
  Rng& rng = seeded ? *seeded : rng_;
  std::int64_t b = 0;
  for (; b < request.batch_size && store_.size() > 0; ++b) {
    const Selection selection = selector_->Sample(rng);
    const std::int64_t slot = selection.slot;
    ItemMeta meta = store_.Meta(slot);
    ++meta.times_sampled;
    store_.SetMeta(slot, meta);
    batch.keys[b] = meta.key;
    batch.priorities[b] = meta.priority;
    batch.probabilities[b] = selection.probability;
    batch.table_sizes[b] = store_.size();
    batch.times_sampled[b] = meta.times_sampled;
    batch.insert_times_ns[b] = meta.insert_time_ns;
    batch.policy_versions[b] = meta.policy_version;
    staleness_.Record(now - batch.insert_times_ns[b], version - batch.policy_versions[b]);
    drawn_slots_[b] = slot;
    if (max_times_sampled_ > 0 && meta.times_sampled >= max_times_sampled_) {
      // Freeing a slot keeps its bytes until the next insert, so the gather
      // below still reads them.
      RemoveLocked(slot);
      ++counters_.removed_max_times_sampled;
    }
  }
  // Gather field by field (see GatherFieldLocked).
  for (std::size_t f = 0; f < fields.size(); ++f) {
    GatherFieldLocked(f, b, batch.fields[f].data.get());
  }
  if (b < request.batch_size) {
    // The table ran out of items (max_times_sampled): trim to the draws made.
    const auto n = static_cast<std::size_t>(b);
    batch.keys.resize(n);
    batch.priorities.resize(n);
    batch.probabilities.resize(n);
    batch.table_sizes.resize(n);
    batch.times_sampled.resize(n);
    batch.policy_versions.resize(n);
    batch.insert_times_ns.resize(n);
    for (std::size_t f = 0; f < fields.size(); ++f) {
      batch.fields[f].shape[0] = b;
      batch.fields[f].num_bytes = n * fields[f].ItemBytes();
    }
  }
  limiter_.OnSamples(b);
  counters_.sampled += b;
  sample_rate_.Add(b, now);
}

// Prefetching a few rows ahead: the draws are random rows, and independent
// loads overlap where a row-by-row copy would wait for each miss in turn.
void Table::GatherFieldLocked(std::size_t field, std::int64_t n, std::byte* out) const {
  constexpr std::int64_t kPrefetchAhead = 8;
  const ColumnStore& columns = store_.columns();
  const std::size_t column = ItemStore::FieldColumn(field);
  if (!frame_layout_.shared(field)) {
    const std::size_t bytes = columns.width(column);
    for (std::int64_t i = 0; i < n; ++i) {
      if (i + kPrefetchAhead < n) {
        __builtin_prefetch(columns.Row(column, drawn_slots_[i + kPrefetchAhead]));
      }
      std::memcpy(out + static_cast<std::size_t>(i) * bytes, columns.Row(column, drawn_slots_[i]),
                  bytes);
    }
    return;
  }
  const std::size_t frame_bytes = frame_layout_.frame_bytes;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) {
      __builtin_prefetch(columns.Row(column, drawn_slots_[i + kPrefetchAhead]));
    }
    for (const FrameId id : FrameIdsLocked(field, drawn_slots_[i])) {
      std::memcpy(out, frames_->Frame(id), frame_bytes);
      out += frame_bytes;
    }
  }
}

// --- Priorities and configuration ---------------------------------------------

PriorityUpdateResult Table::UpdatePriorities(std::span<const std::uint64_t> keys,
                                             std::span<const double> priorities) {
  if (keys.size() != priorities.size()) {
    throw InvalidArgument("update_priorities: " + std::to_string(keys.size()) + " keys but " +
                          std::to_string(priorities.size()) + " priorities");
  }
  CheckPriorities(priorities, "priorities");
  PriorityUpdateResult result;
  MutexLock lock(mu_);
  CheckOpenLocked();
  const SelectorBatch batch(*selector_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::int64_t slot = store_.Find(keys[i]);
    if (slot < 0) {
      ++result.ignored;
      continue;
    }
    ItemMeta meta = store_.Meta(slot);
    histogram_.Remove(meta.priority);
    histogram_.Add(priorities[i]);
    meta.priority = priorities[i];
    store_.SetMeta(slot, meta);
    selector_->Update(slot, priorities[i]);
    max_priority_ = std::max(max_priority_, priorities[i]);
    ++result.updated;
  }
  counters_.priorities_updated += result.updated;
  counters_.priority_updates_ignored += result.ignored;
  return result;
}

void Table::Reconfigure(const TableReconfig& change) {
  Completions done;
  {
    MutexLock lock(mu_);
    CheckOpenLocked();
    // Validate the whole change before applying any of it.
    SelectorOptions selector = selector_options_;
    if (change.alpha) selector.alpha = *change.alpha;
    if (change.beta) selector.beta = *change.beta;
    selector.Validate();
    if (change.rate_limiter) change.rate_limiter->Validate();
    if (change.max_times_sampled && *change.max_times_sampled < 0) {
      throw InvalidArgument("max_times_sampled must be >= 0 (0: unlimited), got " +
                            std::to_string(*change.max_times_sampled));
    }

    selector_->Reconfigure(selector);
    selector_options_ = selector;
    if (change.rate_limiter) limiter_.Reconfigure(*change.rate_limiter);
    if (change.max_times_sampled) {
      max_times_sampled_ = *change.max_times_sampled;
      if (max_times_sampled_ > 0) {
        std::vector<std::int64_t> spent;
        for (std::int64_t slot = 0; slot < store_.capacity(); ++slot) {
          const ItemMeta meta = store_.Meta(slot);
          if (meta.key != 0 && meta.times_sampled >= max_times_sampled_) spent.push_back(slot);
        }
        for (std::int64_t slot : spent) RemoveLocked(slot);
        counters_.removed_max_times_sampled += static_cast<std::int64_t>(spent.size());
      }
    }
    ServeWaitersLocked(done);
  }
  Run(done);
}

void Table::SetRemoteCounts(std::int64_t inserts, std::int64_t samples) {
  Completions done;
  {
    MutexLock lock(mu_);
    limiter_.SetRemoteCounts(inserts, samples);
    if (!closed_) ServeWaitersLocked(done);
  }
  Run(done);
}

// --- Checkpoints ----------------------------------------------------------------

TableSnapshot Table::TakeSnapshot() {
  MutexLock lock(mu_);
  TableState state;
  state.options = initial_options_;
  state.options.selector = selector_options_;
  state.options.max_times_sampled = max_times_sampled_;
  state.options.rate_limiter = limiter_.options();
  state.limiter = limiter_.counts();
  state.counters = counters_;
  state.next_seq = next_seq_;
  state.max_priority = max_priority_;
  state.max_policy_version = max_policy_version_;
  state.size = store_.size();
  return TableSnapshot(this, std::move(state), store_.columns().TakeSnapshot(),
                       frames_ ? frames_->TakeSnapshot() : ColumnStore::Snapshot(),
                       store_.slot_bits());
}

void Table::ReleaseSnapshot() {
  MutexLock lock(mu_);
  store_.columns().ReleaseSnapshot();
  if (frames_) frames_->ReleaseSnapshot();
}

void Table::RestoreFrame(FrameId id, std::span<const std::byte> frame) {
  MutexLock lock(mu_);
  if (!frames_) throw InvalidArgument("table '" + initial_options_.name + "' has no frame fields");
  frames_->RestoreFrame(id, frame);
}

void Table::RestoreRows(std::size_t column, std::span<const std::int64_t> slots,
                        std::span<const std::byte> rows) {
  MutexLock lock(mu_);
  ColumnStore& columns = store_.columns();
  const std::size_t width = columns.width(column);
  assert(rows.size() == slots.size() * width);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    std::memcpy(columns.MutableRow(column, slots[i]), rows.data() + i * width, width);
  }
}

void Table::FinishRestore(const TableState& state, const std::vector<std::int64_t>& slots) {
  MutexLock lock(mu_);
  assert(store_.size() == 0 && counters_.inserted == 0);
  selector_options_ = state.options.selector;
  selector_->Reconfigure(selector_options_);
  if (frames_) {
    std::vector<FrameId> references;
    references.reserve(slots.size() * static_cast<std::size_t>(frame_layout_.frames_per_item));
    for (std::int64_t slot : slots) {
      for (std::size_t f = 0; f < frame_layout_.frames_per_field.size(); ++f) {
        const auto ids = FrameIdsLocked(f, slot);
        references.insert(references.end(), ids.begin(), ids.end());
      }
    }
    frames_->FinishRestore(references);  // DataLoss before anything else changes
  }
  store_.Restore(slots);
  for (std::int64_t slot : slots) {
    const double priority = store_.Meta(slot).priority;
    selector_->Insert(slot, priority);
    histogram_.Add(priority);
  }
  max_times_sampled_ = state.options.max_times_sampled;
  limiter_.Reconfigure(state.options.rate_limiter);
  limiter_.RestoreCounts(state.limiter);
  counters_ = state.counters;
  next_seq_ = state.next_seq;
  max_priority_ = state.max_priority;
  max_policy_version_ = state.max_policy_version;
}

TableSnapshot::TableSnapshot(TableSnapshot&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)),
      state_(std::move(other.state_)),
      columns_(std::move(other.columns_)),
      frames_(std::move(other.frames_)),
      slot_bits_(other.slot_bits_) {}

TableSnapshot::~TableSnapshot() {
  if (table_ == nullptr) return;
  // Drop the chunk references first, outside the table lock: chunks that
  // writers replaced meanwhile are freed here, by the checkpoint thread.
  columns_ = ColumnStore::Snapshot();
  frames_ = ColumnStore::Snapshot();
  table_->ReleaseSnapshot();
}

}  // namespace rlswarm::replay
