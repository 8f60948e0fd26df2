#include "learner/checkpoint_reader.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

at::ScalarType ParseDtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float64") return at::kDouble;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw DataLoss("checkpoint: unknown dtype '" + name + "'");
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

uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
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
      f.crc32 = jf.at("crc32").get<uint32_t>();
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
      if (Crc32(bytes.data(), bytes.size()) != f.crc32) return f.path + " fails its CRC-32";
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

std::optional<std::string> FindLatestCheckpoint(const std::string& root) {
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec)) return std::nullopt;
  std::vector<std::pair<int64_t, std::string>> candidates;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    const int64_t update = UpdateOfName(entry.path().filename().string());
    if (update >= 0) candidates.emplace_back(update, entry.path().string());
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (const auto& [update, dir] : candidates) {
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
