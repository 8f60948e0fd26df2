#pragma once

// FramePool: the frames of a table's frame-stacked fields, each distinct
// frame stored once and shared by every item that holds it.
//
// An Atari observation is a stack of the last 4 frames, and the next step's
// observation repeats 3 of them; an n-step transition's next observation is
// a later transition's observation. Stored inline, a Pong transition holds 8
// frames (56 KB); each env step brings one new frame (7 KB). So fields
// declared frame-stacked (TableOptions::frame_fields, shape [stack,
// frame...]) keep, per item, only the ids of their frames, and the frames
// live here once, found by content: a frame is hashed (outside the table
// lock) and compared byte for byte with the one its hash finds, so sharing
// never depends on how the producer ordered or batched its items, and two
// different frames are never merged.
//
// Each frame counts the item references to it; the last Release frees its
// id for reuse. A freed frame keeps its bytes until an Acquire reuses the
// id, so a sample may gather the frames of an item it removed in the same
// call. Memory: ids up to `max_frames` (every frame of every item distinct)
// are addressable, but chunks are allocated on first write, so the pool
// grows to the frames actually live.
//
// Copy-on-write snapshots as ColumnStore's, for checkpoints.
//
// Not thread safe: the owning Table serialises every call.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "replay/column_store.h"
#include "replay/signature.h"

namespace rlswarm::replay {

using FrameId = std::uint32_t;

// Which fields of a signature are kept as frame references, and the frame
// they share: a frame-stacked field of shape [stack, frame...] holds `stack`
// frames of shape frame... and the field's dtype.
struct FrameLayout {
  std::vector<std::int64_t> frames_per_field;  // per signature field; 0: stored inline
  // Per field: how many frames of an item come before its own, in field
  // order (where a field's frames start among an item's frame hashes).
  std::vector<std::int64_t> first_frame_of_field;
  std::size_t frame_bytes = 0;       // 0: no frame-stacked field
  std::int64_t frames_per_item = 0;  // summed over the fields

  // Throws InvalidArgument naming the table and the field if a name is not
  // a field, is listed twice, has fewer than 2 dimensions, or if the
  // fields' frames differ in shape or dtype.
  static FrameLayout Make(const Signature& signature, std::span<const std::string> frame_fields,
                          const std::string& table);
  bool any() const { return frame_bytes > 0; }
  bool shared(std::size_t field) const { return frames_per_field[field] > 0; }
  // Bytes of field `field` in an item row: its frame ids, or its data.
  std::size_t RowBytes(const Signature& signature, std::size_t field) const;
};

class FramePool {
 public:
  FramePool(std::size_t frame_bytes, std::int64_t max_frames, std::int64_t chunk_rows);

  static std::uint64_t Hash(const std::byte* frame, std::size_t bytes);

  // The id of a frame with these bytes, with one more reference: an equal
  // frame already stored, or a copy of this one. If it throws (no memory),
  // the pool is unchanged.
  FrameId Acquire(const std::byte* frame, std::uint64_t hash);
  // Drops one reference; frees the frame when it was the last. Never throws.
  void Release(FrameId id);
  const std::byte* Frame(FrameId id) const { return store_.Row(0, id); }

  std::size_t frame_bytes() const { return store_.width(0); }
  std::int64_t live_frames() const { return live_; }
  // Acquires so far, and how many of them stored a new frame.
  std::int64_t acquired() const { return acquired_; }
  std::int64_t stored() const { return stored_; }
  // The pool's resident memory: the frames up to the highest id used, the
  // per-frame counts and hashes, the free list and the hash index (its nodes
  // and buckets).
  std::size_t memory_bytes() const;

  ColumnStore::Snapshot TakeSnapshot() { return store_.TakeSnapshot(); }
  void ReleaseSnapshot() { store_.ReleaseSnapshot(); }
  std::int64_t chunks_copied() const { return store_.chunks_copied(); }

  // Restoring into a pool nothing has used: RestoreFrame() writes frame
  // `id`; FinishRestore() then counts `references` (every live item's
  // frame ids) and indexes the referenced frames. Throws InvalidArgument
  // for an id out of range, and DataLoss for an id restored twice or a
  // reference to a frame that was not restored.
  void RestoreFrame(FrameId id, std::span<const std::byte> frame);
  void FinishRestore(std::span<const FrameId> references);

 private:
  void Index(FrameId id, std::uint64_t hash);

  ColumnStore store_;  // one column, frame_bytes wide, one row per id
  const std::int64_t max_frames_;
  std::vector<std::uint32_t> references_;             // per id below the high-water mark
  std::vector<std::uint64_t> hashes_;                 // per id below the high-water mark
  std::vector<FrameId> free_;                         // ids below the high-water mark, unreferenced
  std::unordered_map<std::uint64_t, FrameId> index_;  // hash -> a live frame with it
  std::int64_t live_ = 0;
  std::int64_t acquired_ = 0;
  std::int64_t stored_ = 0;
  std::vector<bool> restored_;  // during a restore only
};

}  // namespace rlswarm::replay
