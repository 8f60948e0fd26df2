#include "learner/checkpoint/checkpoint.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "learner/checkpoint/checkpoint_writing.h"
#include "models/dtype_translation.h"

namespace rlswarm::learner {
namespace checkpoint_writing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

void WriteDurably(const fs::path& path, const void* data, size_t size) {
  try {
    WriteFileDurably(path.string(), std::span(static_cast<const std::byte*>(data), size));
  } catch (const Error& e) {
    ThrowError(e.code(), "checkpoint: " + std::string(e.what()) + " (a partial file is removed)");
  }
}

std::string DirName(int64_t update_count) {
  char name[32];
  std::snprintf(name, sizeof(name), "update-%012lld", static_cast<long long>(update_count));
  return name;
}

std::vector<std::string> SectionNames(ShardedModel& online, const ShardedModel* target) {
  std::vector<std::string> names = {"params"};
  if (target) names.push_back("target");
  if (online.options().trainable) {
    for (const auto& [name, t] : online.optimizer().State()) {
      if (name != "step") names.push_back(name);
    }
  }
  return names;
}

void CopySections(ShardedModel& online, const ShardedModel* target, const at::Tensor& out) {
  at::NoGradGuard no_grad;
  int64_t row = 0;
  out[row++].copy_(online.LocalShard());
  if (target) out[row++].copy_(target->LocalShard());
  if (online.options().trainable) {
    for (const auto& [name, t] : online.optimizer().State()) {
      if (name != "step") out[row++].copy_(t);  // copy_ converts to the master dtype
    }
  }
}

json ManifestDraft(ShardedModel& online, const std::vector<std::string>& sections,
                   const CheckpointProgress& progress, int64_t file_bytes) {
  const auto& layouts = online.layouts();
  const int shard_count = online.shard_count();
  json j;
  j["format"] = kCheckpointFormat;
  j["model"] = online.spec().name;
  j["world_size"] = online.communicator().world_size();
  j["shard_count"] = shard_count;
  j["dtype"] = std::string(models::FloatTypeName(online.LocalShard().scalar_type()));
  j["strategy"] = std::string(ShardingStrategyName(online.options().sharding.strategy));
  j["update_count"] = progress.update_count;
  j["rng"] = {{"seed", progress.seed}, {"update_count", progress.update_count}};
  const bool trainable = online.options().trainable;
  j["optimizer"] = {
      {"kind",
       trainable ? (online.optimizer().options().kind == OptimizerKind::kAdam ? "adam" : "rmsprop")
                 : ""},
      {"step", trainable ? online.optimizer().step() : 0}};
  j["sections"] = sections;
  j["local_numel"] = online.LocalShard().numel();
  j["units"] = json::array();
  for (const UnitLayout& u : layouts) {
    json ju = {{"name", u.name},
               {"numel", u.numel},
               {"shard_numel", u.shard_numel},
               {"local_offset", u.local_offset},
               {"params", json::array()}};
    for (const ParamLayout& p : u.params) {
      ju["params"].push_back(
          {{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}, {"numel", p.numel}});
    }
    j["units"].push_back(std::move(ju));
  }
  j["files"] = json::array();
  for (int s = 0; s < shard_count; ++s) {
    j["files"].push_back({{"path", "shard-" + std::to_string(s) + ".bin"},
                          {"shard", s},
                          {"bytes", file_bytes},
                          {"crc32c", 0u}});
  }
  return j;
}

void PublishManifest(const fs::path& dir, const json& manifest) {
  SyncDirectory(dir.string());  // the data files' directory entries first
  WriteFileAtomically((dir / kCheckpointManifest).string(), manifest.dump(1) + "\n");
}

void RemoveOld(const fs::path& root, int keep) {
  if (keep <= 0) return;
  int complete = 0;
  std::error_code ec;
  for (const std::string& name : CheckpointNamesNewestFirst(root.string())) {
    if (!fs::exists(root / name / kCheckpointManifest, ec)) continue;
    if (++complete > keep) fs::remove_all(root / name, ec);
  }
}

}  // namespace checkpoint_writing

namespace {
namespace fs = std::filesystem;
}  // namespace

std::string SaveCheckpoint(const std::string& root, ShardedModel& online,
                           const ShardedModel* target, const CheckpointProgress& progress,
                           int keep) {
  namespace cw = checkpoint_writing;
  Communicator& comm = online.communicator();
  const int rank = comm.rank();
  const int world = comm.world_size();
  const fs::path dir = fs::path(root) / cw::DirName(progress.update_count);
  const int shard_count = online.shard_count();

  const std::vector<std::string> sections = cw::SectionNames(online, target);
  at::Tensor data = at::empty({static_cast<int64_t>(sections.size()), online.LocalShard().numel()},
                              at::TensorOptions().dtype(online.LocalShard().scalar_type()));
  cw::CopySections(online, target, data);
  const int64_t file_bytes = static_cast<int64_t>(data.nbytes());
  // Slot r: rank r's CRC-32C (if it writes a shard); slot world: ranks that failed.
  at::Tensor exchange = at::zeros({world + 1}, at::kLong);
  std::string error;
  try {
    if (rank < shard_count) {
      fs::create_directories(dir);
      // A stale manifest from an interrupted earlier save of this update
      // must not vouch for the new files.
      if (rank == 0) fs::remove(dir / kCheckpointManifest);
      cw::WriteDurably(dir / ("shard-" + std::to_string(rank) + ".bin"), data.data_ptr(),
                       data.nbytes());
      exchange[rank].fill_(static_cast<int64_t>(ShardCrc(data.data_ptr(), data.nbytes())));
    }
  } catch (const std::exception& e) {
    error = e.what();
    exchange[world].fill_(1);
  }
  comm.ControlAllReduceSum(exchange, "checkpoint");
  if (exchange[world].item<int64_t>() != 0) {
    throw Unavailable("checkpoint " + dir.string() + ": a rank failed to write its shard" +
                      (error.empty() ? "" : ": " + error));
  }
  if (rank == 0) {
    nlohmann::json manifest = cw::ManifestDraft(online, sections, progress, file_bytes);
    for (int s = 0; s < shard_count; ++s) {
      manifest["files"][s]["crc32c"] = static_cast<uint32_t>(exchange[s].item<int64_t>());
    }
    cw::PublishManifest(dir, manifest);
    cw::RemoveOld(root, keep);
  }
  return dir.string();
}

at::Tensor LocalSliceOf(const ShardedModel& model, const models::NamedTensors& named) {
  std::map<std::string, at::Tensor> by_name(named.begin(), named.end());
  const int rank = model.shard_index();  // hybrid_shard: not the world rank
  at::Tensor local = at::zeros_like(model.LocalShard());
  for (const UnitLayout& u : model.layouts()) {
    at::Tensor full = at::zeros({u.padded_numel}, local.options());
    for (const ParamLayout& p : u.params) {
      auto it = by_name.find(p.name);
      if (it == by_name.end()) throw InvalidArgument("checkpoint: missing '" + p.name + "'");
      if (it->second.numel() != p.numel) {
        throw InvalidArgument("checkpoint: '" + p.name + "' has the wrong size");
      }
      full.narrow(0, p.offset, p.numel).copy_(it->second.reshape(-1));
    }
    local.narrow(0, u.local_offset, u.shard_numel)
        .copy_(full.narrow(0, rank * u.shard_numel, u.shard_numel));
  }
  return local;
}

CheckpointProgress LoadCheckpoint(const std::string& dir, ShardedModel& online,
                                  ShardedModel* target) {
  CheckpointManifest m;
  auto sections = ReadCheckpointSections(dir, &m);
  if (m.model != online.spec().name) {
    throw InvalidArgument("checkpoint " + dir + " holds model '" + m.model + "', not '" +
                          online.spec().name + "'");
  }
  online.LoadFullParameters(sections.at("params"));
  if (target) {
    auto it = sections.find("target");
    target->LoadFullParameters(it != sections.end() ? it->second : sections.at("params"));
  }
  if (online.options().trainable && !m.optimizer.empty()) {
    const OptimizerKind kind = ParseOptimizerKind(m.optimizer);
    if (kind != online.optimizer().options().kind) {
      throw InvalidArgument("checkpoint " + dir + " holds " + m.optimizer + " state");
    }
    // The same kind with other options (centered RMSprop or not) keeps
    // other state: say so rather than drop a section or miss one.
    std::set<std::string> unused;
    for (const auto& [name, t] : sections) {
      if (name != "params" && name != "target") unused.insert(name);
    }
    models::NamedTensors state;
    for (const auto& [name, t] : online.optimizer().State()) {
      if (name == "step") continue;
      auto it = sections.find(name);
      if (it == sections.end()) {
        throw InvalidArgument("checkpoint " + dir + " has no optimizer state '" + name + "': its " +
                              m.optimizer + " ran with other options (learner.rmsprop_centered?)");
      }
      unused.erase(name);
      state.emplace_back(name, LocalSliceOf(online, it->second));
    }
    if (!unused.empty()) {
      throw InvalidArgument("checkpoint " + dir + " holds optimizer state '" + *unused.begin() +
                            "' that this " + m.optimizer +
                            " does not keep (learner.rmsprop_centered?)");
    }
    state.emplace_back("step", at::scalar_tensor(m.optimizer_step, at::kLong));
    online.optimizer().LoadState(state);
  }
  spdlog::info("loaded checkpoint {} (update {}, saved by {} ranks)", dir, m.update_count,
               m.world_size);
  return CheckpointProgress{m.update_count, m.seed};
}

}  // namespace rlswarm::learner
