#include "replay/item_store.h"

#include <cassert>

namespace rlswarm::replay {
namespace {

std::vector<std::size_t> ColumnWidths(std::span<const std::size_t> field_widths) {
  std::vector<std::size_t> widths = {sizeof(ItemMeta)};
  widths.insert(widths.end(), field_widths.begin(), field_widths.end());
  return widths;
}

}  // namespace

ItemStore::ItemStore(std::span<const std::size_t> field_widths, std::int64_t capacity,
                     std::int64_t chunk_rows)
    : columns_(ColumnWidths(field_widths), capacity, chunk_rows),
      slot_bits_(1),
      prev_(capacity, -1),
      next_(capacity, -1) {
  while ((std::int64_t{1} << slot_bits_) < capacity) ++slot_bits_;
  free_.resize(capacity);
  for (std::int64_t i = 0; i < capacity; ++i) free_[i] = capacity - 1 - i;
}

std::int64_t ItemStore::Find(std::uint64_t key) const {
  if (key == 0) return -1;
  const auto slot = static_cast<std::int64_t>(key & ((std::uint64_t{1} << slot_bits_) - 1));
  if (slot >= capacity()) return -1;
  return columns_.Get<std::uint64_t>(kMetaColumn, slot) == key ? slot : -1;  // key: offset 0
}

void ItemStore::Link(std::int64_t slot) {
  prev_[slot] = tail_;
  next_[slot] = -1;
  if (tail_ >= 0) {
    next_[tail_] = slot;
  } else {
    head_ = slot;
  }
  tail_ = slot;
  ++size_;
}

std::int64_t ItemStore::Allocate(std::uint64_t seq, ItemMeta meta) {
  assert(!free_.empty());
  const std::int64_t slot = free_.back();
  free_.pop_back();
  meta.key = MakeKey(seq, slot);
  SetMeta(slot, meta);
  Link(slot);
  return slot;
}

void ItemStore::Free(std::int64_t slot) {
  const std::int64_t p = prev_[slot];
  const std::int64_t n = next_[slot];
  if (p >= 0) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n >= 0) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[slot] = next_[slot] = -1;
  SetMeta(slot, ItemMeta{});
  free_.push_back(slot);
  --size_;
}

void ItemStore::Restore(const std::vector<std::int64_t>& slots) {
  assert(size_ == 0);
  std::vector<bool> live(capacity(), false);
  for (std::int64_t slot : slots) {
    live[slot] = true;
    Link(slot);
  }
  free_.clear();
  for (std::int64_t slot = capacity() - 1; slot >= 0; --slot) {
    if (!live[slot]) free_.push_back(slot);
  }
}

}  // namespace rlswarm::replay
