#pragma once

// Reading sharded learner checkpoints (the format is described in
// learner/README.md, "Checkpoints"): in the style of PyTorch DCP, a
// checkpoint is a directory <root>/update-<NNNNNNNNNNNN>/ holding one data
// file per shard (shard-<s>.bin: that shard's slice of every unit's flat
// buffer, for each section: params, target, optimizer state) and
// manifest.json (global shapes and offsets of every parameter, the sections,
// dtype, optimizer kind and step, update count, RNG seed, world size, model
// name, the size and CRC-32C of every data file). The manifest is written last
// and atomically, so a directory without a valid manifest, or whose data
// files do not match it, is incomplete or corrupt and is skipped.
//
// Everything here is local (no process group): any process, at any world
// size, can read a checkpoint. Thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "learner/fsdp/shard_layout.h"
#include "models/model_spec.h"

namespace rlswarm::learner {

inline constexpr char kCheckpointFormat[] = "rlswarm-sharded-checkpoint-1";
inline constexpr char kCheckpointManifest[] = "manifest.json";

struct CheckpointFile {
  std::string path;  // relative to the checkpoint directory
  int shard = 0;
  int64_t bytes = 0;
  // CRC-32C (manifest key "crc32c"); checkpoints written before it hold a
  // zlib CRC-32 ("crc32"), which the reader still checks.
  uint32_t crc = 0;
  bool zlib_crc32 = false;
};

struct CheckpointManifest {
  std::string model;     // ModelSpec::name
  int world_size = 1;    // ranks that wrote it
  int shard_count = 1;   // shards per unit (1 for world 1 and no_shard)
  std::string dtype;     // master dtype of every section: "float32", "float64"
  std::string strategy;  // sharding strategy name (informational)
  int64_t update_count = 0;
  uint64_t seed = 0;      // the learner's seed: with update_count, its RNG state
  std::string optimizer;  // "adam", "rmsprop" or "" (no optimizer state)
  int64_t optimizer_step = 0;
  // Sections in file order; each is local_numel elements of `dtype`:
  // "params", then "target" if saved, then the optimizer's state tensors.
  std::vector<std::string> sections;
  int64_t local_numel = 0;
  std::vector<UnitLayout> units;  // as saved (shard_numel, local_offset, params)
  std::vector<CheckpointFile> files;
};

// Throws DataLoss when the manifest is missing, unreadable or malformed.
CheckpointManifest ReadCheckpointManifest(const std::string& dir);

// Reads the manifest and checks every data file's size and CRC. Returns
// the reason it is invalid, or nullopt if it is valid. Never throws.
std::optional<std::string> ValidateCheckpoint(const std::string& dir);

// The names of the update-<n> directories under `root`, newest (highest n)
// first, valid or not; empty when `root` does not exist. Never throws.
std::vector<std::string> CheckpointNamesNewestFirst(const std::string& root);

// The newest valid checkpoint directory under `root` (update-* sorted by
// update count), skipping (and logging) incomplete or corrupt ones; nullopt
// when there is none or `root` does not exist.
std::optional<std::string> FindLatestCheckpoint(const std::string& root);

// Every section reassembled into full named tensors (the resharding step:
// each unit's padded buffer is the concatenation of the shards' slices, each
// parameter a view of it), keyed by section name, in the master dtype.
// Throws DataLoss on a corrupt or incomplete checkpoint.
std::map<std::string, models::NamedTensors> ReadCheckpointSections(const std::string& dir,
                                                                   CheckpointManifest* manifest);

// The online network's full parameters, named as models::ParameterNames, in
// the saved master dtype: what the unsharded model that evaluation runs
// loads (models::QNetwork). `dir` is a checkpoint directory, or a root
// holding update-* directories (the newest valid one is read). Plain
// function, no process group. Throws NotFound when `dir` holds no valid
// checkpoint, DataLoss when the named checkpoint is corrupt.
models::NamedTensors LoadCheckpointParameters(const std::string& dir);

// The checksum a manifest records for a shard file: CRC-32C
// (common/crc32c.h) of its `size` bytes.
uint32_t ShardCrc(const void* data, size_t size);

}  // namespace rlswarm::learner
