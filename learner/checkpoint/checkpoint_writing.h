#pragma once

// The steps a sharded checkpoint save is made of, shared by the synchronous
// path (checkpoint.cc) and the asynchronous one (async_checkpoint.cc), so
// both write exactly the format checkpoint_reader.h reads. Internal to the
// learner library (it includes nlohmann/json, which the library links
// privately). Thread-compatible; the functions that read the model must run
// on the thread that drives it.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "learner/checkpoint/checkpoint.h"
#include "learner/fsdp/sharded_model.h"

namespace rlswarm::learner::checkpoint_writing {

// "update-<12 digits>": zero-padded so that names sort by update.
std::string DirName(int64_t update_count);

// This rank's sections in manifest order: "params", "target" (if any), then
// the optimizer's state tensors but "step" (when trainable).
std::vector<std::string> SectionNames(ShardedModel& online, const ShardedModel* target);

// Copies this rank's sections (SectionNames order) into the rows of `out`, a
// CPU [sections, local_numel] tensor in the master dtype. Blocks until the
// copies are done (a device-to-host copy on CUDA).
void CopySections(ShardedModel& online, const ShardedModel* target, const at::Tensor& out);

// The manifest with every data file's CRC-32C at 0: the caller fills in
// files[s]["crc32c"] once every shard is durable.
nlohmann::json ManifestDraft(ShardedModel& online, const std::vector<std::string>& sections,
                             const CheckpointProgress& progress, int64_t file_bytes);

// common/atomic_file.h's WriteFileDurably, its error prefixed "checkpoint:".
// Throws ResourceExhausted (full disk), Unavailable, ...
void WriteDurably(const std::filesystem::path& path, const void* data, size_t size);

// The commit point of a save: the directory's entries (the data files)
// synced, then manifest.json written atomically (common/atomic_file.h).
void PublishManifest(const std::filesystem::path& dir, const nlohmann::json& manifest);

// Removes all but the newest `keep` complete checkpoints under `root`
// (keep <= 0: none removed).
void RemoveOld(const std::filesystem::path& root, int keep);

}  // namespace rlswarm::learner::checkpoint_writing
