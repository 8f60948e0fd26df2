#pragma once

// ItemStore: the items of one table, column-wise in a ColumnStore, plus the
// bookkeeping around them: which slots are live, the FIFO order of the live
// items (for eviction) and the keys.
//
// Layout: rows are slots [0, capacity). Column 0 holds each item's
// metadata as one ItemMeta record (so a draw touches one cache line of
// metadata, not five), then one column per signature field, item bytes
// wide (or frame ids wide for a frame-stacked field). A free slot has key 0.
//
// Keys: key = seq << slot_bits | slot, where seq >= 1 counts every insert of
// the table and slot_bits = ceil(log2(capacity)). A key is never reused
// (seq only grows, and checkpoints keep it), and finding an item by key is
// one array read, with no hash map on the insert path: the slot's stored key
// must equal the key asked for.
//
// FIFO order: an intrusive doubly linked list through the slots, so removing
// any item (max_times_sampled) and evicting the oldest are O(1).
//
// Not thread safe: the owning Table serialises every call.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "replay/column_store.h"
#include "replay/signature.h"

namespace rlswarm::replay {

// The per-item metadata record (column 0). Trivially copyable; checkpoints
// store it as is (little-endian hosts).
struct ItemMeta {
  std::uint64_t key = 0;  // 0 for a free slot
  double priority = 0;
  std::int64_t times_sampled = 0;
  std::int64_t insert_time_ns = 0;  // nanoseconds since the Unix epoch
  std::int64_t policy_version = 0;
};
static_assert(sizeof(ItemMeta) == 40);
inline constexpr std::size_t kMetaColumn = 0;
inline constexpr std::size_t kNumMetaColumns = 1;

class ItemStore {
 public:
  // One column per field, field_widths[f] bytes wide (the field's item
  // bytes, or its frame ids: see FrameLayout).
  ItemStore(std::span<const std::size_t> field_widths, std::int64_t capacity,
            std::int64_t chunk_rows);

  std::int64_t capacity() const { return columns_.capacity(); }
  std::int64_t size() const { return size_; }
  int slot_bits() const { return slot_bits_; }

  std::uint64_t MakeKey(std::uint64_t seq, std::int64_t slot) const {
    return seq << slot_bits_ | static_cast<std::uint64_t>(slot);
  }
  std::uint64_t SeqOf(std::uint64_t key) const { return key >> slot_bits_; }
  // The slot of the live item with `key`, or -1 (evicted, removed, never issued).
  std::int64_t Find(std::uint64_t key) const;

  // Takes a free slot for a new item with sequence number `seq`, stores
  // `meta` with the item's key and appends it to the FIFO order. Requires
  // size() < capacity().
  std::int64_t Allocate(std::uint64_t seq, ItemMeta meta);
  // The slot of the oldest live item, or -1 if empty.
  std::int64_t Oldest() const { return head_; }
  // Frees a live slot (its key becomes 0).
  void Free(std::int64_t slot);

  // Restoring into an empty store: `slots` (distinct, oldest first) become
  // the live items; their metadata (keys) must already be stored. O(capacity).
  void Restore(const std::vector<std::int64_t>& slots);

  ItemMeta Meta(std::int64_t slot) const { return columns_.Get<ItemMeta>(kMetaColumn, slot); }
  void SetMeta(std::int64_t slot, const ItemMeta& meta) { columns_.Set(kMetaColumn, slot, meta); }

  ColumnStore& columns() { return columns_; }
  const ColumnStore& columns() const { return columns_; }
  static std::size_t FieldColumn(std::size_t field) { return kNumMetaColumns + field; }

 private:
  void Link(std::int64_t slot);

  ColumnStore columns_;
  int slot_bits_;
  std::int64_t size_ = 0;
  std::vector<std::int64_t> free_;  // stack of free slots, lowest on top
  std::vector<std::int64_t> prev_;  // FIFO links; -1 ends
  std::vector<std::int64_t> next_;
  std::int64_t head_ = -1;  // oldest
  std::int64_t tail_ = -1;  // newest
};

}  // namespace rlswarm::replay
