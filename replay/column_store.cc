#include "replay/column_store.h"

#include <algorithm>
#include <cassert>

namespace rlswarm::replay {

ColumnStore::ColumnStore(std::vector<std::size_t> widths, std::int64_t capacity,
                         std::int64_t chunk_rows, Allocation allocation)
    : widths_(std::move(widths)), capacity_(capacity), shift_(0) {
  assert(capacity >= 1 && chunk_rows >= 1);
  while ((std::int64_t{1} << shift_) < chunk_rows) ++shift_;
  mask_ = (std::int64_t{1} << shift_) - 1;
  const std::int64_t num_chunks = (capacity_ + mask_) >> shift_;
  columns_.resize(widths_.size());
  for (std::size_t c = 0; c < widths_.size(); ++c) {
    columns_[c].resize(num_chunks);
    if (allocation == Allocation::kOnFirstWrite) continue;
    for (std::int64_t k = 0; k < num_chunks; ++k) {
      columns_[c][k].data = std::make_shared<std::byte[]>(ChunkBytes(c, k));
      allocated_bytes_ += ChunkBytes(c, k);
    }
  }
}

std::size_t ColumnStore::ChunkBytes(std::size_t column, std::int64_t chunk) const {
  const std::int64_t first = chunk << shift_;
  const std::int64_t rows = std::min<std::int64_t>(mask_ + 1, capacity_ - first);
  return static_cast<std::size_t>(rows) * widths_[column];
}

std::byte* ColumnStore::MutableRow(std::size_t column, std::int64_t row) {
  const std::int64_t k = row >> shift_;
  Chunk& chunk = columns_[column][k];
  if (!chunk.data) {
    // First write (Allocation::kOnFirstWrite): no snapshot can share it.
    chunk.data = std::make_shared_for_overwrite<std::byte[]>(ChunkBytes(column, k));
    chunk.generation = generation_;
    allocated_bytes_ += ChunkBytes(column, k);
  } else if (active_snapshots_ > 0 && chunk.generation < generation_) {
    // A snapshot reads this buffer: write to a private copy instead. The
    // snapshot's reference keeps the original alive; whoever drops the last
    // reference (the checkpoint writer, outside the table lock) frees it.
    const std::size_t bytes = ChunkBytes(column, k);
    auto copy = std::make_shared_for_overwrite<std::byte[]>(bytes);
    std::memcpy(copy.get(), chunk.data.get(), bytes);
    chunk.data = std::move(copy);
    chunk.generation = generation_;
    ++chunks_copied_;
  }
  return chunk.data.get() + (row & mask_) * widths_[column];
}

ColumnStore::Snapshot ColumnStore::TakeSnapshot() {
  ++generation_;
  ++active_snapshots_;
  Snapshot snapshot;
  snapshot.widths_ = widths_;
  snapshot.shift_ = shift_;
  snapshot.mask_ = mask_;
  snapshot.chunks_.resize(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    snapshot.chunks_[c].reserve(columns_[c].size());
    for (const Chunk& chunk : columns_[c]) snapshot.chunks_[c].push_back(chunk.data);
  }
  return snapshot;
}

void ColumnStore::ReleaseSnapshot() {
  assert(active_snapshots_ > 0);
  --active_snapshots_;
}

}  // namespace rlswarm::replay
