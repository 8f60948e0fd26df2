#pragma once

// Scalars of a run (returns, losses, rates, priorities, staleness) as a
// stream of (tag, step, wall time, value) records: the one format the run
// directory's scalars.jsonl, the TensorBoard event file and `rlswarm plot`
// share. Tags are TensorBoard-style paths: "eval/mean_return",
// "train/episode_return", "learner/loss", ...; step is the env step count of
// the run when the value was taken.
//
// Thread-safety: a ScalarLog may be written from any thread (it fans out to
// its writers under one mutex); writers themselves are not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace rlswarm::observe {

struct Scalar {
  std::string tag;
  std::int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch (TensorBoard's wall_time)
  double value = 0;
};

class ScalarWriter {
 public:
  virtual ~ScalarWriter() = default;
  virtual void Write(const Scalar& scalar) = 0;
  // Makes everything written so far readable by another process.
  virtual void Flush() = 0;
};

// One JSON object per line: {"tag": ..., "step": ..., "wall_time": ...,
// "value": ...}. Appends to `path` (created if missing); throws
// Unavailable when it cannot be opened.
std::unique_ptr<ScalarWriter> OpenJsonlScalarWriter(const std::string& path);
// Reads a file written by the JSONL writer; lines that do not parse (a run
// killed mid-write) are skipped. Throws NotFound when `path` is missing.
std::vector<Scalar> ReadJsonlScalars(const std::string& path);

// Every scalar to every writer. A writer that fails (a full disk) is
// reported once, in the log and in failures(), and written to no more; the
// others go on and the run does not stop for its scalars.
class ScalarLog {
 public:
  void Add(std::unique_ptr<ScalarWriter> writer);
  // Stamps wall_time with the current time when it is 0.
  void Write(Scalar scalar);
  void Write(const std::string& tag, std::int64_t step, double value);
  void Flush();
  // What each failed writer said, in the order they failed.
  std::vector<std::string> failures() const;

 private:
  struct Entry {
    std::unique_ptr<ScalarWriter> writer;
    bool failed = false;
  };
  // Runs `op` on every writer that has not failed; marks those it throws for.
  template <typename Op>
  void ForEachWorking(Op op) RLSWARM_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Entry> writers_ RLSWARM_GUARDED_BY(mu_);
  std::vector<std::string> failures_ RLSWARM_GUARDED_BY(mu_);
};

}  // namespace rlswarm::observe
