#include "replay/checkpoints/checkpointer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/errors.h"
#include "replay/checkpoints/posix_file_system.h"
#include "replay/json.h"
#include "replay/priority.h"

namespace rlswarm::replay {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Rows are stored as they are in memory.
static_assert(std::endian::native == std::endian::little, "checkpoints assume little-endian");

constexpr char kFormat[] = "rlswarm.replay.checkpoint";
constexpr int kFormatVersion = 1;
constexpr char kPrefix[] = "ckpt-";
constexpr int kSequenceDigits = 20;
constexpr char kDataFile[] = "data.bin";
constexpr char kManifest[] = "MANIFEST.json";
constexpr char kManifestTemp[] = "MANIFEST.json.tmp";
constexpr std::uint64_t kMaxManifestBytes = 64 << 20;

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

std::span<const std::byte> AsBytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// Section names in data.bin: "meta" (ItemMeta records), then "field:<name>".
std::vector<std::string> ColumnNames(const Signature& signature) {
  static_assert(kNumMetaColumns == 1 && kMetaColumn == 0);
  std::vector<std::string> names = {"meta"};
  for (const FieldSpec& f : signature.fields) names.push_back("field:" + f.name);
  return names;
}

// A frame-stacked field's section holds its frame ids (see FrameLayout); a
// table with frame fields has one more section, "frames": each frame that a
// saved item refers to, once, as its id (4 bytes) and its bytes.
constexpr char kFramesSection[] = "frames";

std::size_t ColumnWidth(const Signature& signature, const FrameLayout& layout, std::size_t column) {
  return column == kMetaColumn ? sizeof(ItemMeta)
                               : layout.RowBytes(signature, column - kNumMetaColumns);
}

// The frame ids the rows `live` refer to, ascending, each once.
std::vector<FrameId> ReferencedFrames(
    const ColumnStore::Snapshot& columns, const FrameLayout& layout,
    const std::vector<std::pair<std::uint64_t, std::int64_t>>& live) {
  std::vector<FrameId> ids;
  for (std::size_t f = 0; f < layout.frames_per_field.size(); ++f) {
    const auto frames = static_cast<std::size_t>(layout.frames_per_field[f]);
    for (const auto& row : live) {
      const std::byte* data = columns.Row(kNumMetaColumns + f, row.second);
      for (std::size_t j = 0; j < frames; ++j) {
        FrameId id;
        std::memcpy(&id, data + j * sizeof(FrameId), sizeof(FrameId));
        ids.push_back(id);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::uint32_t BodyCrc(const json& body) { return Crc32c(AsBytes(body.dump())); }

}  // namespace

void CheckpointerOptions::Validate() const {
  if (directory.empty()) throw InvalidArgument("checkpointer: directory is empty");
  if (keep_last < 1) throw InvalidArgument("checkpointer: keep_last must be >= 1");
  if (buffer_bytes < 4096) throw InvalidArgument("checkpointer: buffer_bytes must be >= 4096");
}

Checkpointer::Checkpointer(CheckpointerOptions options, std::shared_ptr<FileSystem> fs)
    : options_(std::move(options)), fs_(fs ? std::move(fs) : std::make_shared<PosixFileSystem>()) {
  options_.Validate();
}

std::string Checkpointer::CheckpointPath(std::int64_t sequence) const {
  char name[64];
  std::snprintf(name, sizeof(name), "%s%0*lld", kPrefix, kSequenceDigits,
                static_cast<long long>(sequence));
  return options_.directory + "/" + name;
}

std::vector<Checkpointer::Candidate> Checkpointer::ListCheckpoints() const {
  std::vector<Candidate> found;
  if (!fs_->Exists(options_.directory)) return found;
  const std::string prefix = kPrefix;
  for (const std::string& name : fs_->ListDir(options_.directory)) {
    if (name.size() != prefix.size() + kSequenceDigits || name.compare(0, prefix.size(), prefix)) {
      continue;
    }
    const std::string digits = name.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found.push_back({std::stoll(digits), options_.directory + "/" + name});
  }
  std::sort(found.begin(), found.end(),
            [](const Candidate& a, const Candidate& b) { return a.sequence > b.sequence; });
  return found;
}

// --- Writing ------------------------------------------------------------------------

CheckpointInfo Checkpointer::Write(Table& table) {
  MutexLock lock(mu_);
  const auto start = SteadyClock::now();
  CheckpointInfo info;
  {
    TableSnapshot snapshot = table.TakeSnapshot();
    info.lock_seconds = Seconds(SteadyClock::now() - start);
    fs_->CreateDir(options_.directory);
    const std::vector<Candidate> existing = ListCheckpoints();
    info.sequence = existing.empty() ? 1 : existing.front().sequence + 1;
    info.path = CheckpointPath(info.sequence);
    try {
      WriteFiles(snapshot, info.path, info.sequence, info);
    } catch (const std::exception& e) {
      spdlog::warn("replay checkpoint {} failed: {}; removing it, older checkpoints are intact",
                   info.path, e.what());
      try {
        fs_->RemoveAll(info.path);
      } catch (const std::exception& cleanup) {
        spdlog::warn("replay checkpoint {}: could not remove it: {}", info.path, cleanup.what());
      }
      throw;
    }
  }  // The snapshot is released here; copied chunks are freed by this thread.
  info.write_seconds = Seconds(SteadyClock::now() - start) - info.lock_seconds;
  spdlog::info("replay checkpoint {}: {} items, {} bytes, {:.3f} ms under the table lock, {:.3f} s",
               info.path, info.items, info.data_bytes, info.lock_seconds * 1e3, info.write_seconds);
  Prune(info.sequence);
  return info;
}

namespace {

// The snapshot's live rows as (insert sequence, slot), oldest first (the
// key's high bits are its insert sequence). Throws Internal when their
// number is not the table's size.
std::vector<std::pair<std::uint64_t, std::int64_t>> LiveRowsOldestFirst(
    const TableSnapshot& snapshot) {
  const std::int64_t size = snapshot.state().size;
  const ColumnStore::Snapshot& columns = snapshot.columns();
  const int slot_bits = snapshot.slot_bits();
  std::vector<std::pair<std::uint64_t, std::int64_t>> live;
  live.reserve(static_cast<std::size_t>(size));
  for (std::int64_t slot = 0; slot < snapshot.capacity(); ++slot) {
    const auto key = columns.Get<ItemMeta>(kMetaColumn, slot).key;
    if (key != 0) live.emplace_back(key >> slot_bits, slot);
  }
  std::sort(live.begin(), live.end());
  if (static_cast<std::int64_t>(live.size()) != size) {
    throw Internal("snapshot holds " + std::to_string(live.size()) + " live rows, expected " +
                   std::to_string(size));
  }
  return live;
}

}  // namespace

void Checkpointer::WriteFiles(const TableSnapshot& snapshot, const std::string& path,
                              std::int64_t sequence, CheckpointInfo& info) {
  const TableState& state = snapshot.state();
  const ColumnStore::Snapshot& columns = snapshot.columns();
  const std::vector<std::pair<std::uint64_t, std::int64_t>> live = LiveRowsOldestFirst(snapshot);

  fs_->CreateDir(path);
  const FrameLayout& layout = snapshot.frame_layout();
  const std::vector<std::string> names = ColumnNames(state.options.signature);
  std::vector<std::byte> buffer;
  buffer.reserve(options_.buffer_bytes);
  json sections = json::array();
  std::uint64_t offset = 0;
  {
    auto file = fs_->NewWritableFile(path + "/" + kDataFile);
    // One section: `rows` rows of `width` bytes, row(i) appends row i's.
    const auto write_section = [&](const std::string& name, std::size_t width, std::size_t rows,
                                   const auto& row) {
      std::uint32_t crc = 0;
      std::uint64_t bytes = 0;
      const auto flush = [&] {
        crc = Crc32cExtend(crc, buffer);
        file->Append(buffer);
        bytes += buffer.size();
        buffer.clear();
      };
      for (std::size_t i = 0; i < rows; ++i) {
        if (buffer.size() + width > options_.buffer_bytes && !buffer.empty()) flush();
        row(i);
      }
      flush();
      sections.push_back({{"name", name},
                          {"width", width},
                          {"offset", offset},
                          {"bytes", bytes},
                          {"crc32c", crc}});
      offset += bytes;
    };
    for (std::size_t c = 0; c < names.size(); ++c) {
      const std::size_t width = ColumnWidth(state.options.signature, layout, c);
      write_section(names[c], width, live.size(), [&](std::size_t i) {
        const std::byte* data = columns.Row(c, live[i].second);
        buffer.insert(buffer.end(), data, data + width);
      });
    }
    if (layout.any()) {
      const std::vector<FrameId> ids = ReferencedFrames(columns, layout, live);
      const ColumnStore::Snapshot& frames = snapshot.frames();
      write_section(kFramesSection, sizeof(FrameId) + layout.frame_bytes, ids.size(),
                    [&](std::size_t i) {
                      const auto* id = reinterpret_cast<const std::byte*>(&ids[i]);
                      buffer.insert(buffer.end(), id, id + sizeof(FrameId));
                      const std::byte* frame = frames.Row(0, ids[i]);
                      buffer.insert(buffer.end(), frame, frame + layout.frame_bytes);
                    });
    }
    file->Sync();
    file->Close();
  }

  const json body = {
      {"format", kFormat},
      {"version", kFormatVersion},
      {"byte_order", "little"},
      {"sequence", sequence},
      {"created_unix_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count()},
      {"state", TableStateToJson(state)},
      {"rows", live.size()},
      {"data_file", {{"name", kDataFile}, {"bytes", offset}}},
      {"sections", sections},
  };
  const std::string text = json{{"body", body}, {"body_crc32c", BodyCrc(body)}}.dump(1) + "\n";
  {
    auto file = fs_->NewWritableFile(path + "/" + kManifestTemp);
    file->Append(AsBytes(text));
    file->Sync();
    file->Close();
  }
  fs_->Rename(path + "/" + kManifestTemp, path + "/" + kManifest);
  fs_->SyncDir(path);
  fs_->SyncDir(options_.directory);
  info.items = static_cast<std::int64_t>(live.size());
  info.data_bytes = offset;
}

void Checkpointer::Prune(std::int64_t newest) {
  try {
    std::int64_t kept = 0;
    for (const Candidate& c : ListCheckpoints()) {
      if (c.sequence > newest) continue;  // not ours to judge
      const bool complete = fs_->Exists(c.path + "/" + kManifest);
      if (complete && kept < options_.keep_last) {
        ++kept;
        continue;
      }
      spdlog::info("replay checkpoint {}: removing ({})", c.path,
                   complete ? "older than the newest kept" : "incomplete");
      fs_->RemoveAll(c.path);
    }
  } catch (const std::exception& e) {
    spdlog::warn("replay checkpoints in {}: pruning failed: {}", options_.directory, e.what());
  }
}

// --- Loading ------------------------------------------------------------------------

namespace {

// Reads `rows` rows of `width` bytes at `offset` of `data`, at most
// `buffer_bytes` a call, handing each run to on_rows(first_row, n, bytes);
// throws DataLoss naming `section` unless their CRC-32C is `expected_crc`.
template <class OnRows>
void ReadSection(ReadableFile& data, const std::string& section, std::uint64_t offset,
                 std::uint64_t rows, std::size_t width, std::size_t buffer_bytes,
                 std::uint32_t expected_crc, OnRows&& on_rows) {
  const std::uint64_t rows_per_read = std::max<std::uint64_t>(1, buffer_bytes / width);
  std::vector<std::byte> buffer;
  std::uint32_t crc = 0;
  for (std::uint64_t row = 0; row < rows; row += rows_per_read) {
    const std::uint64_t n = std::min(rows_per_read, rows - row);
    buffer.resize(n * width);
    data.ReadAt(offset + row * width, buffer);
    crc = Crc32cExtend(crc, buffer);
    on_rows(row, n, std::span<const std::byte>(buffer));
  }
  if (crc != expected_crc) throw DataLoss("section '" + section + "': checksum mismatch");
}

// Reads section "frames" (at `offset`, the data file's last) into `table`.
void RestoreFrames(ReadableFile& data, const json& section, std::uint64_t offset,
                   std::size_t buffer_bytes, Table& table) {
  const std::size_t width = sizeof(FrameId) + table.frame_layout().frame_bytes;
  std::uint64_t bytes = 0;
  std::uint32_t expected_crc = 0;
  try {
    bytes = section.at("bytes").get<std::uint64_t>();
    expected_crc = section.at("crc32c").get<std::uint32_t>();
    if (section.at("name") != kFramesSection || section.at("width").get<std::size_t>() != width ||
        section.at("offset").get<std::uint64_t>() != offset || bytes % width != 0 ||
        offset + bytes != data.Size()) {
      throw DataLoss(std::string("manifest: section '") + kFramesSection +
                     "' is missing or has the wrong size");
    }
  } catch (const json::exception& e) {
    throw DataLoss(std::string("manifest: ") + e.what());
  }
  ReadSection(data, kFramesSection, offset, bytes / width, width, buffer_bytes, expected_crc,
              [&](std::uint64_t, std::uint64_t n, std::span<const std::byte> buffer) {
                for (std::uint64_t i = 0; i < n; ++i) {
                  FrameId id;
                  std::memcpy(&id, buffer.data() + i * width, sizeof(FrameId));
                  try {
                    table.RestoreFrame(
                        id, buffer.subspan(i * width + sizeof(FrameId), width - sizeof(FrameId)));
                  } catch (const InvalidArgument& e) {
                    throw DataLoss(std::string("section 'frames': ") + e.what());
                  }
                }
              });
}

// What a checkpoint's manifest says, its checksum checked.
struct Manifest {
  TableState state;
  std::uint64_t rows = 0;
  std::uint64_t data_bytes = 0;
  json sections;
};

// Reads and checks the manifest: present, parseable, its own checksum
// right, a format this code writes. Throws DataLoss (or an I/O error).
Manifest ReadManifest(ReadableFile& file) {
  if (file.Size() > kMaxManifestBytes) throw DataLoss("manifest is too large");
  std::string text(file.Size(), '\0');
  file.ReadAt(0, std::as_writable_bytes(std::span<char>(text.data(), text.size())));
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw DataLoss(std::string("manifest is not valid JSON: ") + e.what());
  }
  if (!root.is_object() || !root.contains("body") || !root.contains("body_crc32c") ||
      !root["body_crc32c"].is_number_unsigned()) {
    throw DataLoss("manifest lacks body or body_crc32c");
  }
  const json& body = root["body"];
  if (BodyCrc(body) != root["body_crc32c"].get<std::uint32_t>()) {
    throw DataLoss("manifest checksum mismatch");
  }
  Manifest m;
  try {
    if (body.at("format") != kFormat || body.at("version") != kFormatVersion ||
        body.at("byte_order") != "little") {
      throw DataLoss("unknown format " + body.at("format").dump() + " version " +
                     body.at("version").dump() + " byte order " + body.at("byte_order").dump());
    }
    m.state = TableStateFromJson(body.at("state"));
    m.state.options.Validate();
    m.rows = body.at("rows").get<std::uint64_t>();
    m.data_bytes = body.at("data_file").at("bytes").get<std::uint64_t>();
    m.sections = body.at("sections");
  } catch (const json::exception& e) {
    throw DataLoss(std::string("manifest: ") + e.what());
  } catch (const InvalidArgument& e) {
    throw DataLoss(std::string("manifest: ") + e.what());
  }
  return m;
}

// The options of the table to restore checkpoint `path` into: `options`,
// with the selector, rate limiter and max_times_sampled `saved` (as last
// reconfigured). Throws FailedPrecondition when the checkpoint holds a
// different table (frame fields, signature, capacity or selector kind).
TableOptions MergeSavedOptions(const TableOptions& saved, const TableOptions& options,
                               const std::string& path) {
  if (saved.frame_fields != options.frame_fields) {
    throw FailedPrecondition("checkpoint " + path + " holds table '" + saved.name +
                             "' with frame fields " + json(saved.frame_fields).dump() +
                             "; the table to restore has " + json(options.frame_fields).dump() +
                             " (rlswarm's replay.frame_sharing decides them: a checkpoint "
                             "written before frames were shared restores with frame_sharing "
                             "off)");
  }
  if (saved.signature != options.signature || saved.capacity != options.capacity ||
      saved.selector.kind != options.selector.kind) {
    throw FailedPrecondition("checkpoint " + path + " holds table '" + saved.name +
                             "' with capacity " + std::to_string(saved.capacity) + ", selector " +
                             std::string(SelectorKindName(saved.selector.kind)) +
                             " and signature " + SignatureToJson(saved.signature).dump() +
                             "; the table to restore differs: capacity " +
                             std::to_string(options.capacity) + ", selector " +
                             std::string(SelectorKindName(options.selector.kind)) + ", signature " +
                             SignatureToJson(options.signature).dump());
  }
  TableOptions merged = options;
  merged.selector = saved.selector;
  merged.rate_limiter = saved.rate_limiter;
  merged.max_times_sampled = saved.max_times_sampled;
  return merged;
}

}  // namespace

std::optional<LoadedCheckpoint> Checkpointer::LoadNewest(const TableOptions& options,
                                                         std::shared_ptr<const Clock> clock) const {
  options.Validate();
  for (const Candidate& candidate : ListCheckpoints()) {
    try {
      LoadedCheckpoint loaded = Load(candidate, options, clock);
      spdlog::info("replay checkpoint {}: loaded {} items", candidate.path, loaded.info.items);
      return loaded;
    } catch (const FailedPrecondition&) {
      throw;
    } catch (const Error& e) {
      // DataLoss (corrupt, truncated), NotFound (incomplete), I/O errors.
      spdlog::warn("replay checkpoint {}: skipped: {}", candidate.path, e.what());
    }
  }
  return std::nullopt;
}

LoadedCheckpoint Checkpointer::Load(const Candidate& candidate, const TableOptions& options,
                                    std::shared_ptr<const Clock> clock) const {
  const std::string& path = candidate.path;
  Manifest manifest = ReadManifest(*fs_->OpenReadable(path + "/" + kManifest));
  TableState& state = manifest.state;
  const std::uint64_t rows = manifest.rows;
  const std::uint64_t data_bytes = manifest.data_bytes;
  const json& sections = manifest.sections;
  const TableOptions merged = MergeSavedOptions(state.options, options, path);
  state.options = merged;
  if (rows > static_cast<std::uint64_t>(merged.capacity) ||
      rows != static_cast<std::uint64_t>(state.size)) {
    throw DataLoss("manifest: " + std::to_string(rows) + " rows for size " +
                   std::to_string(state.size) + " and capacity " + std::to_string(merged.capacity));
  }

  // The data file and its sections: sizes first, then every byte's checksum.
  auto data = fs_->OpenReadable(path + "/" + kDataFile);
  if (data->Size() != data_bytes) {
    throw DataLoss(std::string(kDataFile) + " has " + std::to_string(data->Size()) +
                   " bytes, the manifest says " + std::to_string(data_bytes));
  }
  const std::vector<std::string> names = ColumnNames(merged.signature);
  auto table = std::make_unique<Table>(merged, std::move(clock));
  const FrameLayout& layout = table->frame_layout();
  const std::size_t expected_sections = names.size() + (layout.any() ? 1 : 0);
  if (!sections.is_array() || sections.size() != expected_sections) {
    throw DataLoss("manifest: expected " + std::to_string(expected_sections) + " sections");
  }
  const int slot_bits = [&] {
    int bits = 1;
    while ((std::int64_t{1} << bits) < merged.capacity) ++bits;
    return bits;
  }();
  std::vector<std::int64_t> slots;
  slots.reserve(rows);
  std::vector<bool> used(merged.capacity, false);
  std::uint64_t previous_seq = 0;
  std::uint64_t offset = 0;
  for (std::size_t c = 0; c < names.size(); ++c) {
    const json& section = sections[c];
    std::size_t width = 0;
    std::uint64_t bytes = 0;
    std::uint32_t expected_crc = 0;
    try {
      width = section.at("width").get<std::size_t>();
      bytes = section.at("bytes").get<std::uint64_t>();
      expected_crc = section.at("crc32c").get<std::uint32_t>();
      if (section.at("name") != names[c] || section.at("offset").get<std::uint64_t>() != offset) {
        throw DataLoss("manifest: section " + std::to_string(c) + " is not '" + names[c] +
                       "' at offset " + std::to_string(offset));
      }
    } catch (const json::exception& e) {
      throw DataLoss(std::string("manifest: ") + e.what());
    }
    const std::size_t expected_width = ColumnWidth(merged.signature, layout, c);
    if (width != expected_width || bytes != rows * width) {
      throw DataLoss("manifest: section '" + names[c] + "' has the wrong size");
    }
    ReadSection(
        *data, names[c], offset, rows, width, options_.buffer_bytes, expected_crc,
        [&](std::uint64_t row, std::uint64_t n, std::span<const std::byte> buffer) {
          for (std::uint64_t i = 0; c == kMetaColumn && i < n; ++i) {
            // Distinct slots in range, sequences increasing and below next_seq,
            // priorities finite and >= 0: checked before the rows are written.
            ItemMeta meta;
            std::memcpy(&meta, buffer.data() + i * sizeof(ItemMeta), sizeof(ItemMeta));
            const std::uint64_t seq = meta.key >> slot_bits;
            const auto slot =
                static_cast<std::int64_t>(meta.key & ((std::uint64_t{1} << slot_bits) - 1));
            if (slot >= merged.capacity || used[slot] || seq <= previous_seq ||
                seq >= state.next_seq) {
              throw DataLoss("section 'meta': key " + std::to_string(meta.key) + " is invalid");
            }
            if (!IsValidPriority(meta.priority)) {
              throw DataLoss("section 'meta': priority " + std::to_string(meta.priority) +
                             " is not finite and >= 0");
            }
            used[slot] = true;
            previous_seq = seq;
            slots.push_back(slot);
          }
          table->RestoreRows(c, std::span(slots).subspan(row, n), buffer);
        });
    offset += bytes;
  }
  if (layout.any()) RestoreFrames(*data, sections.back(), offset, options_.buffer_bytes, *table);
  table->FinishRestore(state, slots);
  LoadedCheckpoint loaded;
  loaded.table = std::move(table);
  loaded.info.path = path;
  loaded.info.sequence = candidate.sequence;
  loaded.info.items = static_cast<std::int64_t>(rows);
  loaded.info.data_bytes = data_bytes;
  return loaded;
}

}  // namespace rlswarm::replay
