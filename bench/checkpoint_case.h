#pragma once

// learner_bench's checkpoint case (`learner_bench --checkpoint`): what a
// sharded checkpoint costs the training thread, synchronous
// (learner::SaveCheckpoint: copy, write, fsync, publish, all on the training
// thread) against asynchronous (learner::AsyncCheckpointer: the training
// thread only copies the shards into the reused host buffer; the writer
// thread does the rest).
//
// For one model at world size 1: a ShardedModel with Adam (so params,
// target and two optimizer-state sections are saved, float32) trains one
// step on a random batch of `batch` between saves. sync_save_s: median over
// `reps` of SaveCheckpoint's time. async_stall_s: median of Save()'s time
// (the training thread's stall), after one warm-up save that allocates and
// pre-faults the buffer. async_total_s: median of the time from Save() to the
// writer's "published". Files go to `dir` (removed afterwards); fsync makes
// the figures depend on that file system, so point it at the storage a run
// checkpoints to.
//
// World size 2 is not measured here: it needs two processes and the
// rendezvous store; tests/ and tests/learner/async_checkpoint_test.cc check it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "models/model_spec.h"

namespace rlswarm::bench {

struct CheckpointCaseOptions {
  std::string dir = "/tmp";  // a fresh directory is made (and removed) under it
  int reps = 3;
  std::string device = "cpu";  // "cpu" or "cuda" (cuda:0)
};

// Returns {"case": "checkpoint", "model": model, "batch": batch, "params":
// spec.Numel(), "world_size": world_size, "sync_save_s": ..., "async_stall_s":
// ..., "async_total_s": ...}. Throws std::invalid_argument for world_size !=
// 1, rlswarm::Unavailable when the files cannot be written.
nlohmann::json MeasureCheckpoint(const models::ModelSpec& spec, const std::string& model,
                                 int64_t batch, int world_size,
                                 const CheckpointCaseOptions& options);

}  // namespace rlswarm::bench
