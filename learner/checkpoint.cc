#include "learner/checkpoint.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string DtypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kBFloat16:
      return "bfloat16";
    case at::kHalf:
      return "float16";
    default:
      throw InvalidArgument("checkpoint: unsupported master dtype");
  }
}

// write(2) the whole buffer and fsync, so the bytes are on disk before the
// manifest that vouches for them exists.
void WriteDurably(const fs::path& path, const void* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Unavailable("checkpoint: cannot create " + path.string());
  const auto* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      throw Unavailable("checkpoint: cannot write " + path.string());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) throw Unavailable("checkpoint: fsync failed on " + path.string());
}

void FsyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string DirName(int64_t update_count) {
  char name[32];
  std::snprintf(name, sizeof(name), "update-%012lld", static_cast<long long>(update_count));
  return name;
}

// This rank's sections, in manifest order, as one [sections, local_numel]
// tensor in the master dtype.
std::pair<std::vector<std::string>, at::Tensor> LocalSections(ShardedModel& online,
                                                              const ShardedModel* target) {
  std::vector<std::string> names = {"params"};
  std::vector<at::Tensor> rows = {online.LocalShard()};
  if (target) {
    names.push_back("target");
    rows.push_back(target->LocalShard());
  }
  if (online.options().trainable) {
    for (const auto& [name, t] : online.optimizer().State()) {
      if (name == "step") continue;
      names.push_back(name);
      rows.push_back(t.to(online.LocalShard().scalar_type()));
    }
  }
  return {names, at::stack(rows).cpu().contiguous()};
}

json ManifestJson(ShardedModel& online, const std::vector<std::string>& sections,
                  const CheckpointProgress& progress, const std::vector<uint32_t>& crcs,
                  int64_t file_bytes) {
  const auto& layouts = online.layouts();
  const int shard_count =
      layouts.empty() ? 1 : static_cast<int>(layouts[0].padded_numel / layouts[0].shard_numel);
  json j;
  j["format"] = kCheckpointFormat;
  j["model"] = online.spec().name;
  j["world_size"] = online.communicator().world_size();
  j["shard_count"] = shard_count;
  j["dtype"] = DtypeName(online.LocalShard().scalar_type());
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
                          {"crc32", crcs[s]}});
  }
  return j;
}

void RemoveOld(const fs::path& root, int keep) {
  if (keep <= 0) return;
  std::vector<fs::path> complete;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("update-", 0) == 0 && fs::exists(entry.path() / kCheckpointManifest)) {
      complete.push_back(entry.path());
    }
  }
  std::sort(complete.begin(), complete.end());  // zero-padded: sorts by update
  for (size_t i = 0; i + keep < complete.size(); ++i) fs::remove_all(complete[i], ec);
}

}  // namespace

std::string SaveCheckpoint(const std::string& root, ShardedModel& online,
                           const ShardedModel* target, const CheckpointProgress& progress,
                           int keep) {
  Communicator& comm = online.communicator();
  const int rank = comm.rank();
  const int world = comm.world_size();
  const fs::path dir = fs::path(root) / DirName(progress.update_count);
  const auto& layouts = online.layouts();
  const int shard_count =
      layouts.empty() ? 1 : static_cast<int>(layouts[0].padded_numel / layouts[0].shard_numel);

  auto [sections, data] = LocalSections(online, target);
  const int64_t file_bytes = static_cast<int64_t>(data.nbytes());
  // Slot r: rank r's CRC-32 (if it writes a shard); slot world: ranks that failed.
  at::Tensor exchange = at::zeros({world + 1}, at::kLong);
  std::string error;
  try {
    if (rank < shard_count) {
      fs::create_directories(dir);
      // A stale manifest from an interrupted earlier save of this update
      // must not vouch for the new files.
      if (rank == 0) fs::remove(dir / kCheckpointManifest);
      WriteDurably(dir / ("shard-" + std::to_string(rank) + ".bin"), data.data_ptr(),
                   data.nbytes());
      exchange[rank].fill_(static_cast<int64_t>(Crc32(data.data_ptr(), data.nbytes())));
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
    std::vector<uint32_t> crcs(shard_count);
    for (int s = 0; s < shard_count; ++s)
      crcs[s] = static_cast<uint32_t>(exchange[s].item<int64_t>());
    FsyncDirectory(dir);
    const std::string text =
        ManifestJson(online, sections, progress, crcs, file_bytes).dump(1) + "\n";
    const fs::path tmp = dir / (std::string(kCheckpointManifest) + ".tmp");
    WriteDurably(tmp, text.data(), text.size());
    fs::rename(tmp, dir / kCheckpointManifest);
    FsyncDirectory(dir);
    RemoveOld(root, keep);
  }
  return dir.string();
}

at::Tensor LocalSliceOf(const ShardedModel& model, const models::NamedTensors& named) {
  std::map<std::string, at::Tensor> by_name(named.begin(), named.end());
  const int rank = model.direct() ? 0 : const_cast<ShardedModel&>(model).communicator().rank();
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
    models::NamedTensors state;
    for (const auto& [name, t] : online.optimizer().State()) {
      if (name == "step") continue;
      state.emplace_back(name, LocalSliceOf(online, sections.at(name)));
    }
    state.emplace_back("step", at::scalar_tensor(m.optimizer_step, at::kLong));
    online.optimizer().LoadState(state);
  }
  spdlog::info("loaded checkpoint {} (update {}, saved by {} ranks)", dir, m.update_count,
               m.world_size);
  return CheckpointProgress{m.update_count, m.seed};
}

}  // namespace rlswarm::learner
