#pragma once

// Checkpointer: writes a table to a directory and restores the newest valid
// checkpoint from it, without stopping the table.
//
// Writing: Table::TakeSnapshot() (copy-on-write, O(columns * chunks) under
// the table lock), then everything else without the table lock: collect the
// live rows oldest first, write them column by column to data.bin with a
// CRC-32C per column, fsync; write MANIFEST.json.tmp (the table's options and
// counters, the file size and every column's offset, size and CRC, and a
// CRC of the manifest body itself), fsync, rename to MANIFEST.json, fsync
// the checkpoint directory and its parent. The rename is the commit: a
// checkpoint without MANIFEST.json never happened.
//
//   <directory>/ckpt-00000000000000000007/{data.bin, MANIFEST.json}
//
// A failed write (a full disk: ResourceExhausted) removes its own partial
// directory and rethrows; older checkpoints are never touched by a write,
// and only the `keep_last` newest are kept after a successful one. The table
// serves throughout.
//
// Loading: candidates newest first; a checkpoint that is incomplete,
// truncated or corrupt (missing manifest, bad JSON, any checksum or size
// that does not match, keys out of range) is logged and skipped, never
// half-loaded (it is read into a fresh table that is dropped on error).
//
// One process writes a directory at a time. Thread safe: concurrent Write()
// calls run one after the other.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/thread_annotations.h"
#include "replay/checkpoints/interface.h"
#include "replay/table.h"

namespace rlswarm::replay {

struct CheckpointerOptions {
  std::string directory;
  // Complete checkpoints kept after a successful write (>= 1).
  std::int64_t keep_last = 2;
  // Bytes buffered per write and read call.
  std::size_t buffer_bytes = std::size_t{1} << 20;

  // Throws InvalidArgument on an empty directory, keep_last < 1 or a buffer
  // under 4 KiB.
  void Validate() const;
};

struct CheckpointInfo {
  std::string path;
  std::int64_t sequence = 0;
  std::int64_t items = 0;
  std::uint64_t data_bytes = 0;
  double lock_seconds = 0;   // taking the snapshot, under the table lock
  double write_seconds = 0;  // everything else
};

struct LoadedCheckpoint {
  std::unique_ptr<Table> table;
  CheckpointInfo info;
};

class Checkpointer {
 public:
  // Throws InvalidArgument on bad options. `fs` defaults to PosixFileSystem.
  explicit Checkpointer(CheckpointerOptions options, std::shared_ptr<FileSystem> fs = nullptr);

  // Writes a checkpoint of `table` (which may keep serving, or be closed).
  // Blocks the calling thread for the write. Throws ResourceExhausted on a
  // full disk, other rlswarm errors on other I/O failures (see interface.h);
  // then nothing of this checkpoint remains and the previous ones are intact.
  CheckpointInfo Write(Table& table) RLSWARM_EXCLUDES(mu_);

  // Restores the newest valid checkpoint into a new table built from
  // `options`; std::nullopt if there is none (or no directory). The
  // checkpoint must have the same signature, capacity and selector kind
  // (else FailedPrecondition: restoring someone else's table is a
  // configuration error, not corruption); the rate limiter,
  // max_times_sampled, alpha and beta come from the checkpoint, as last
  // reconfigured. Logs what it loaded and what it skipped and why.
  std::optional<LoadedCheckpoint> LoadNewest(const TableOptions& options,
                                             std::shared_ptr<const Clock> clock = nullptr) const;

  // The directory of checkpoint `sequence`.
  std::string CheckpointPath(std::int64_t sequence) const;

 private:
  struct Candidate {
    std::int64_t sequence;
    std::string path;
  };
  // Checkpoint directories, newest first (complete or not).
  std::vector<Candidate> ListCheckpoints() const;
  void WriteFiles(const TableSnapshot& snapshot, const std::string& path, std::int64_t sequence,
                  CheckpointInfo& info) RLSWARM_REQUIRES(mu_);
  LoadedCheckpoint Load(const Candidate& candidate, const TableOptions& options,
                        std::shared_ptr<const Clock> clock) const;
  // Removes all but the keep_last newest complete checkpoints; logs failures.
  void Prune(std::int64_t newest) RLSWARM_REQUIRES(mu_);

  const CheckpointerOptions options_;
  const std::shared_ptr<FileSystem> fs_;
  // One Write() at a time. It guards no member: what it protects is the
  // directory on disk (the next sequence number, which checkpoints Prune()
  // removes), so WriteFiles() and Prune() require it.
  Mutex mu_;
};

}  // namespace rlswarm::replay
