#include "learner/checkpoint/checkpoint_reader.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "common/crc32c.h"
#include "common/errors.h"
#include "models/dtype_translation.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

at::ScalarType ParseDtype(const std::string& name) {
  try {
    return models::ParseFloatType(name);
  } catch (const InvalidArgument& e) {
    throw DataLoss("checkpoint: " + std::string(e.what()));
  }
}
uint32_t FileCrc(const CheckpointFile& f, const std::string& bytes) {
  if (!f.zlib_crc32) return ShardCrc(bytes.data(), bytes.size());
  boost::crc_32_type zlib;
  zlib.process_bytes(bytes.data(), bytes.size());
  return zlib.checksum();
}

std::string ReadWholeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataLoss("checkpoint: cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses "update-<n>"; -1 for other names.
int64_t UpdateOfName(const std::string& name) {
  constexpr std::string_view kPrefix = "update-";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return -1;
  const std::string digits = name.substr(kPrefix.size());
  if (!std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

}  // namespace

uint32_t ShardCrc(const void* data, size_t size) {
  return Crc32c(std::span(static_cast<const std::byte*>(data), size));
}

CheckpointManifest ReadCheckpointManifest(const std::string& dir) {
  const fs::path path = fs::path(dir) / kCheckpointManifest;
  if (!fs::exists(path)) throw DataLoss("checkpoint: no manifest in " + dir);
  try {
    const json j = json::parse(ReadWholeFile(path));
    if (j.at("format").get<std::string>() != kCheckpointFormat) {
      throw DataLoss("checkpoint: unknown format in " + path.string());
    }
    CheckpointManifest m;
    m.model = j.at("model").get<std::string>();
    m.world_size = j.at("world_size").get<int>();
    m.shard_count = j.at("shard_count").get<int>();
    m.dtype = j.at("dtype").get<std::string>();
    m.strategy = j.at("strategy").get<std::string>();
    m.update_count = j.at("update_count").get<int64_t>();
    m.seed = j.at("rng").at("seed").get<uint64_t>();
    m.optimizer = j.at("optimizer").at("kind").get<std::string>();
    m.optimizer_step = j.at("optimizer").at("step").get<int64_t>();
    m.sections = j.at("sections").get<std::vector<std::string>>();
    m.local_numel = j.at("local_numel").get<int64_t>();
    for (const json& ju : j.at("units")) {
      UnitLayout u;
      u.name = ju.at("name").get<std::string>();
      u.numel = ju.at("numel").get<int64_t>();
      u.shard_numel = ju.at("shard_numel").get<int64_t>();
      u.padded_numel = u.shard_numel * m.shard_count;
      u.local_offset = ju.at("local_offset").get<int64_t>();
      for (const json& jp : ju.at("params")) {
        ParamLayout p;
        p.name = jp.at("name").get<std::string>();
        p.shape = jp.at("shape").get<std::vector<int64_t>>();
        p.offset = jp.at("offset").get<int64_t>();
        p.numel = jp.at("numel").get<int64_t>();
        u.params.push_back(std::move(p));
      }
      m.units.push_back(std::move(u));
    }
    for (const json& jf : j.at("files")) {
      CheckpointFile f;
      f.path = jf.at("path").get<std::string>();
      f.shard = jf.at("shard").get<int>();
      f.bytes = jf.at("bytes").get<int64_t>();
      f.zlib_crc32 = !jf.contains("crc32c");
      f.crc = jf.at(f.zlib_crc32 ? "crc32" : "crc32c").get<uint32_t>();
      m.files.push_back(std::move(f));
    }
    if (static_cast<int>(m.files.size()) != m.shard_count) {
      throw DataLoss("checkpoint: manifest lists " + std::to_string(m.files.size()) +
                     " files for " + std::to_string(m.shard_count) + " shards");
    }
    for (const UnitLayout& u : m.units) {
      if (u.local_offset + u.shard_numel > m.local_numel) {
        throw DataLoss("checkpoint: unit " + u.name + " lies outside the shard");
      }
      for (const ParamLayout& p : u.params) {
        if (p.offset < 0 || p.offset + p.numel > u.numel) {
          throw DataLoss("checkpoint: parameter " + p.name + " lies outside its unit");
        }
      }
    }
    return m;
  } catch (const json::exception& e) {
    throw DataLoss("checkpoint: malformed manifest " + path.string() + ": " + e.what());
  }
}

std::optional<std::string> ValidateCheckpoint(const std::string& dir) {
  try {
    const CheckpointManifest m = ReadCheckpointManifest(dir);
    const int64_t element = static_cast<int64_t>(c10::elementSize(ParseDtype(m.dtype)));
    const int64_t expected = element * m.local_numel * static_cast<int64_t>(m.sections.size());
    for (const CheckpointFile& f : m.files) {
      const fs::path path = fs::path(dir) / f.path;
      if (!fs::exists(path)) return "missing " + f.path;
      if (static_cast<int64_t>(fs::file_size(path)) != f.bytes || f.bytes != expected) {
        return f.path + " has the wrong size";
      }
      const std::string bytes = ReadWholeFile(path);
      if (FileCrc(f, bytes) != f.crc) return f.path + " fails its CRC";
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

std::vector<std::string> CheckpointNamesNewestFirst(const std::string& root) {
  std::error_code ec;
  std::vector<std::pair<int64_t, std::string>> candidates;
  if (root.empty() || !fs::is_directory(root, ec)) return {};
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    const int64_t update = UpdateOfName(name);
    if (update >= 0) candidates.emplace_back(update, name);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  std::vector<std::string> names;
  for (auto& [update, name] : candidates) names.push_back(std::move(name));
  return names;
}

std::optional<std::string> FindLatestCheckpoint(const std::string& root) {
  for (const std::string& name : CheckpointNamesNewestFirst(root)) {
    const std::string dir = (fs::path(root) / name).string();
    const std::optional<std::string> problem = ValidateCheckpoint(dir);
    if (!problem) return dir;
    spdlog::warn("skipping checkpoint {}: {}", dir, *problem);
  }
  return std::nullopt;
}

std::map<std::string, models::NamedTensors> ReadCheckpointSections(const std::string& dir,
                                                                   CheckpointManifest* manifest) {
  if (auto problem = ValidateCheckpoint(dir)) {
    throw DataLoss("checkpoint " + dir + " is invalid: " + *problem);
  }
  CheckpointManifest m = ReadCheckpointManifest(dir);
  const at::ScalarType dtype = ParseDtype(m.dtype);
  const int64_t num_sections = static_cast<int64_t>(m.sections.size());
  // shards[s]: [num_sections, local_numel] as written by shard s.
  std::vector<at::Tensor> shards(m.shard_count);
  for (const CheckpointFile& f : m.files) {
    if (f.shard < 0 || f.shard >= m.shard_count || shards[f.shard].defined()) {
      throw DataLoss("checkpoint: bad shard number in " + dir);
    }
    const std::string bytes = ReadWholeFile(fs::path(dir) / f.path);
    at::Tensor t = at::empty({num_sections, m.local_numel}, at::TensorOptions().dtype(dtype));
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    shards[f.shard] = t;
  }
  std::map<std::string, models::NamedTensors> out;
  for (int64_t s = 0; s < num_sections; ++s) {
    models::NamedTensors& named = out[m.sections[s]];
    for (const UnitLayout& u : m.units) {
      std::vector<at::Tensor> slices;
      for (const at::Tensor& shard : shards) {
        slices.push_back(shard[s].narrow(0, u.local_offset, u.shard_numel));
      }
      const at::Tensor full = at::cat(slices);  // the unit's padded buffer
      for (const ParamLayout& p : u.params) {
        named.emplace_back(p.name, full.narrow(0, p.offset, p.numel).reshape(p.shape).clone());
      }
    }
  }
  if (manifest) *manifest = std::move(m);
  return out;
}

namespace {

// Why `root` gave no checkpoint to load: missing, not a directory, nothing
// that looks like a checkpoint in it, or what is wrong with each candidate
// (newest first), so a user can tell a wrong path from a broken save.
std::string NoCheckpointReason(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return root + " does not exist";
  if (!fs::is_directory(root, ec)) return root + " is not a directory";
  std::vector<std::pair<int64_t, std::string>> candidates;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const int64_t update = UpdateOfName(entry.path().filename().string());
    if (entry.is_directory() && update >= 0) {
      candidates.emplace_back(update, entry.path().string());
    }
  }
  if (candidates.empty()) {
    return "no checkpoint in " + root + ": it holds neither a " + kCheckpointManifest +
           " nor update-N directories";
  }
  std::sort(candidates.rbegin(), candidates.rend());
  std::string reason = "no valid checkpoint in " + root + ":";
  for (const auto& [update, dir] : candidates) {
    reason += " " + fs::path(dir).filename().string() + ": " +
              ValidateCheckpoint(dir).value_or("valid now (written meanwhile?)") + ";";
  }
  reason.back() = '.';
  return reason;
}

}  // namespace

models::NamedTensors LoadCheckpointParameters(const std::string& dir) {
  std::string chosen = dir;
  if (!fs::exists(fs::path(dir) / kCheckpointManifest)) {
    std::optional<std::string> latest = FindLatestCheckpoint(dir);
    if (!latest) throw NotFound(NoCheckpointReason(dir));
    chosen = *latest;
  }
  auto sections = ReadCheckpointSections(chosen, nullptr);
  return std::move(sections.at("params"));
}

}  // namespace rlswarm::learner
