#include "replay/frame_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <new>
#include <string_view>

#include "common/errors.h"

namespace rlswarm::replay {

FrameLayout FrameLayout::Make(const Signature& signature, std::span<const std::string> frame_fields,
                              const std::string& table) {
  FrameLayout layout;
  layout.frames_per_field.assign(signature.fields.size(), 0);
  layout.first_frame_of_field.assign(signature.fields.size(), 0);
  const FieldSpec* first = nullptr;
  for (const std::string& name : frame_fields) {
    const std::string where = "table '" + table + "': frame field '" + name + "'";
    const int index = signature.IndexOf(name);
    if (index < 0) throw InvalidArgument(where + " is not a field of the signature");
    const FieldSpec& field = signature.fields[static_cast<std::size_t>(index)];
    if (layout.frames_per_field[static_cast<std::size_t>(index)] > 0) {
      throw InvalidArgument(where + " is listed twice");
    }
    if (field.shape.size() < 2) {
      throw InvalidArgument(where + " has shape " + ShapeToString(field.shape) +
                            ": a stack of frames needs [stack, frame...], 2 dimensions or more");
    }
    if (first != nullptr && (field.dtype != first->dtype ||
                             !std::equal(field.shape.begin() + 1, field.shape.end(),
                                         first->shape.begin() + 1, first->shape.end()))) {
      throw InvalidArgument(where + " holds frames of another shape or dtype than '" + first->name +
                            "' (" + ShapeToString(field.shape) + " vs " +
                            ShapeToString(first->shape) + "): the fields share one frame pool");
    }
    first = &field;
    layout.frames_per_field[static_cast<std::size_t>(index)] = field.shape[0];
    layout.frames_per_item += field.shape[0];
    layout.frame_bytes = field.ItemBytes() / static_cast<std::size_t>(field.shape[0]);
  }
  for (std::size_t f = 1; f < layout.frames_per_field.size(); ++f) {
    layout.first_frame_of_field[f] =
        layout.first_frame_of_field[f - 1] + layout.frames_per_field[f - 1];
  }
  return layout;
}

std::size_t FrameLayout::RowBytes(const Signature& signature, std::size_t field) const {
  return shared(field) ? static_cast<std::size_t>(frames_per_field[field]) * sizeof(FrameId)
                       : signature.fields[field].ItemBytes();
}

FramePool::FramePool(std::size_t frame_bytes, std::int64_t max_frames, std::int64_t chunk_rows)
    : store_({frame_bytes}, max_frames, chunk_rows, ColumnStore::Allocation::kOnFirstWrite),
      max_frames_(max_frames) {
  if (max_frames < 1 || max_frames > std::int64_t{0xFFFFFFFF}) {
    throw InvalidArgument("frame pool: " + std::to_string(max_frames) +
                          " frames do not fit 32-bit frame ids (capacity too large)");
  }
}

std::uint64_t FramePool::Hash(const std::byte* frame, std::size_t bytes) {
  return std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(frame), bytes));
}

// Whatever throws here (a chunk's allocation or copy-on-write copy, the
// vectors' growth) throws before the pool changes, so a failed Acquire
// leaves nothing to undo; Release never allocates (free_ keeps room for
// every id), so undoing acquired frames cannot fail.
FrameId FramePool::Acquire(const std::byte* frame, std::uint64_t hash) {
  const std::size_t bytes = frame_bytes();
  if (const auto it = index_.find(hash); it != index_.end()) {
    if (std::memcmp(Frame(it->second), frame, bytes) == 0) {
      ++references_[it->second];
      ++acquired_;
      return it->second;
    }
  }
  const bool reuse = !free_.empty();
  // Cannot run out: every live item holds at most frames_per_item frames
  // and the pool addresses capacity * frames_per_item.
  assert(reuse || static_cast<std::int64_t>(references_.size()) < max_frames_);
  const FrameId id = reuse ? free_.back() : static_cast<FrameId>(references_.size());
  std::byte* row = store_.MutableRow(0, id);
  if (reuse) {
    free_.pop_back();
  } else {
    free_.reserve(references_.size() + 1);
    hashes_.reserve(references_.size() + 1);
    references_.push_back(0);
    hashes_.push_back(0);
  }
  std::memcpy(row, frame, bytes);
  references_[id] = 1;
  ++live_;
  ++stored_;
  ++acquired_;
  Index(id, hash);
  return id;
}

void FramePool::Index(FrameId id, std::uint64_t hash) {
  hashes_[id] = hash;
  // A different frame with the same hash keeps the index entry: this one is
  // stored unindexed (never merged, just not found by later equal frames).
  // Without memory for the entry it stays unindexed too: later equal
  // frames are then stored again, which costs memory, not correctness.
  try {
    index_.try_emplace(hash, id);
  } catch (const std::bad_alloc&) {
  }
}

void FramePool::Release(FrameId id) {
  assert(id < references_.size() && references_[id] > 0);
  if (--references_[id] > 0) return;
  if (const auto it = index_.find(hashes_[id]); it != index_.end() && it->second == id) {
    index_.erase(it);
  }
  free_.push_back(id);
  --live_;
}

std::size_t FramePool::memory_bytes() const {
  // Frames up to the highest id used: chunks are allocated whole, but a
  // chunk's pages become memory only as frames are written to them. An
  // unordered_map node holds the pair and the next pointer (libstdc++ caches
  // no hash for integer keys); each bucket is one pointer.
  const std::size_t node = sizeof(void*) + sizeof(std::pair<const std::uint64_t, FrameId>);
  return references_.size() * frame_bytes() + references_.capacity() * sizeof(std::uint32_t) +
         hashes_.capacity() * sizeof(std::uint64_t) + free_.capacity() * sizeof(FrameId) +
         index_.size() * node + index_.bucket_count() * sizeof(void*);
}

void FramePool::RestoreFrame(FrameId id, std::span<const std::byte> frame) {
  if (static_cast<std::int64_t>(id) >= max_frames_ || frame.size() != frame_bytes()) {
    throw InvalidArgument("frame pool: frame " + std::to_string(id) + " of " +
                          std::to_string(frame.size()) + " bytes does not fit a pool of " +
                          std::to_string(max_frames_) + " frames of " +
                          std::to_string(frame_bytes()) + " bytes");
  }
  if (restored_.size() <= id) restored_.resize(id + std::size_t{1}, false);
  if (restored_[id]) throw DataLoss("frame pool: frame " + std::to_string(id) + " appears twice");
  restored_[id] = true;
  std::memcpy(store_.MutableRow(0, id), frame.data(), frame.size());
}

void FramePool::FinishRestore(std::span<const FrameId> references) {
  assert(live_ == 0 && references_.empty());
  references_.assign(restored_.size(), 0);
  hashes_.assign(restored_.size(), 0);
  for (const FrameId id : references) {
    if (id >= restored_.size() || !restored_[id]) {
      throw DataLoss("frame pool: an item refers to frame " + std::to_string(id) +
                     ", which the checkpoint does not hold");
    }
    ++references_[id];
  }
  for (std::size_t id = references_.size(); id-- > 0;) {
    if (references_[id] == 0) {
      free_.push_back(static_cast<FrameId>(id));
      continue;
    }
    ++live_;
    Index(static_cast<FrameId>(id), Hash(Frame(static_cast<FrameId>(id)), frame_bytes()));
  }
  restored_ = {};
}

}  // namespace rlswarm::replay
