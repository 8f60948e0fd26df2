#pragma once

// ColumnStore: the table's memory. Fixed-width columns (one per signature
// field, plus the per-item metadata) over `capacity` rows, all allocated up
// front. Each column is cut into chunks of `chunk_rows` rows; a column is
// contiguous within a chunk, so gathering a field for a batch copies
// item-sized runs.
//
// Copy-on-write snapshots: TakeSnapshot() only copies the chunk pointers
// (O(columns * chunks), microseconds for millions of rows), so a checkpoint
// holds the table lock that briefly. While a snapshot is active, the first
// write to a chunk that the snapshot shares copies that chunk (one column,
// chunk_rows rows) and writes to the copy; the snapshot keeps reading the
// original. Chunks nobody writes during a checkpoint are never copied.
//
// Not thread safe: the owner (Table) serialises every call, including
// ReleaseSnapshot(). A Snapshot itself is immutable and may be read from any
// thread without the owner's lock.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace rlswarm::replay {

class ColumnStore {
 public:
  // A consistent, read-only view of every column at the time it was taken.
  class Snapshot {
   public:
    const std::byte* Row(std::size_t column, std::int64_t row) const {
      return chunks_[column][row >> shift_].get() + (row & mask_) * widths_[column];
    }
    template <class T>
    T Get(std::size_t column, std::int64_t row) const {
      T value;
      std::memcpy(&value, Row(column, row), sizeof(T));
      return value;
    }

   private:
    friend class ColumnStore;
    std::vector<std::size_t> widths_;
    int shift_ = 0;
    std::int64_t mask_ = 0;
    std::vector<std::vector<std::shared_ptr<const std::byte[]>>> chunks_;
  };

  // Whether chunks are allocated (zeroed) up front, or each one (not
  // zeroed) on the first write to it: for stores sized for a worst case
  // that is rarely reached (FramePool). Rows of a chunk never written must
  // not be read.
  enum class Allocation { kUpFront, kOnFirstWrite };

  // `chunk_rows` is rounded up to a power of two.
  ColumnStore(std::vector<std::size_t> widths, std::int64_t capacity, std::int64_t chunk_rows,
              Allocation allocation = Allocation::kUpFront);

  std::size_t num_columns() const { return widths_.size(); }
  std::size_t width(std::size_t column) const { return widths_[column]; }
  std::int64_t capacity() const { return capacity_; }
  // Rows per chunk (a power of two): rows [k * chunk_rows(), (k + 1) *
  // chunk_rows()) of a column are contiguous in memory.
  std::int64_t chunk_rows() const { return mask_ + 1; }

  const std::byte* Row(std::size_t column, std::int64_t row) const {
    return columns_[column][row >> shift_].data.get() + (row & mask_) * widths_[column];
  }
  // Copies the chunk first if an active snapshot shares it.
  std::byte* MutableRow(std::size_t column, std::int64_t row);

  template <class T>
  T Get(std::size_t column, std::int64_t row) const {
    T value;
    std::memcpy(&value, Row(column, row), sizeof(T));
    return value;
  }
  template <class T>
  void Set(std::size_t column, std::int64_t row, T value) {
    std::memcpy(MutableRow(column, row), &value, sizeof(T));
  }

  // Shares every chunk with the returned snapshot. Each TakeSnapshot() must
  // be matched by one ReleaseSnapshot() once the snapshot is no longer read.
  Snapshot TakeSnapshot();
  void ReleaseSnapshot();
  std::int64_t active_snapshots() const { return active_snapshots_; }
  // Chunks copied because a snapshot shared them (for Info and tests).
  std::int64_t chunks_copied() const { return chunks_copied_; }
  // Bytes of the chunks allocated (copies held only by snapshots excluded).
  std::size_t allocated_bytes() const { return allocated_bytes_; }

 private:
  struct Chunk {
    std::shared_ptr<std::byte[]> data;
    // Generation of the newest snapshot that cannot see this buffer: a
    // buffer copied after snapshot g was taken belongs to the store alone.
    std::uint64_t generation = 0;
  };

  std::size_t ChunkBytes(std::size_t column, std::int64_t chunk) const;

  std::vector<std::size_t> widths_;
  std::int64_t capacity_;
  int shift_;
  std::int64_t mask_;
  std::vector<std::vector<Chunk>> columns_;
  std::uint64_t generation_ = 0;  // of the newest snapshot
  std::int64_t active_snapshots_ = 0;
  std::int64_t chunks_copied_ = 0;
  std::size_t allocated_bytes_ = 0;
};

}  // namespace rlswarm::replay
