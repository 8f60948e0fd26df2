#pragma once

// Writing a sharded checkpoint from the ranks of a ShardedModel, and loading
// one into a ShardedModel at any world size (resharding). The format and the
// reading side are in checkpoint_reader.h.
//
// Atomicity: every shard's data file is written and fsynced first; the ranks
// then exchange their CRC-32s (one all-reduce, which is also the barrier);
// rank 0 writes the manifest to a temporary file, fsyncs it, renames it to
// manifest.json and fsyncs the directory. A crash at any point leaves either
// a complete checkpoint or a directory without a manifest, which readers
// skip.
//
// Not thread-safe (drives the model's collectives).

#include <cstdint>
#include <string>

#include "learner/checkpoint/checkpoint_reader.h"
#include "learner/fsdp/sharded_model.h"

namespace rlswarm::learner {

struct CheckpointProgress {
  int64_t update_count = 0;
  uint64_t seed = 0;
};

// Writes <root>/update-<update_count>/ from every rank (see above) and, on
// rank 0, removes all but the newest `keep` complete checkpoints (keep <= 0:
// none removed). `target` may be null. Collective: every rank calls it with
// the same arguments. Returns the checkpoint directory. Throws Unavailable
// (on every rank) when any rank could not write its file.
std::string SaveCheckpoint(const std::string& root, ShardedModel& online,
                           const ShardedModel* target, const CheckpointProgress& progress,
                           int keep = 2);

// Loads the checkpoint in `dir` into this rank's shards of `online` (params
// and, when trainable, optimizer state and step) and of `target` (if not null
// and saved). The world size may differ from the one that saved it: full
// tensors are reassembled from the saved slices and this rank's slices taken
// (the optimizer state is element-wise, so it reshards like the
// parameters). Local: no collective. Throws DataLoss (corrupt), InvalidArgument
// (another model or optimizer kind).
CheckpointProgress LoadCheckpoint(const std::string& dir, ShardedModel& online,
                                  ShardedModel* target);

// This rank's flat shard (the layout of online.LocalShard()) of full named
// tensors: what LoadFullParameters does, for any per-parameter state.
at::Tensor LocalSliceOf(const ShardedModel& model, const models::NamedTensors& named);

}  // namespace rlswarm::learner
