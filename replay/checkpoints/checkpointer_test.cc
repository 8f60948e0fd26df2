#include "replay/checkpoints/checkpointer.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/crc32c.h"
#include "common/errors.h"
#include "replay/checkpoints/posix_file_system.h"
#include "replay/test_util.h"

namespace rlswarm::replay {
namespace {

namespace fs = std::filesystem;
using testing::FieldAt;
using testing::TestBatch;
using testing::TestOptions;

// Wraps the real file system; `on_append` runs before every Append and may
// throw (a full disk) or block (a slow disk).
class HookedFileSystem final : public FileSystem {
 public:
  std::function<void(const std::string& path, std::size_t bytes)> on_append;

  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override {
    return std::make_unique<File>(this, path, real_.NewWritableFile(path));
  }
  std::unique_ptr<ReadableFile> OpenReadable(const std::string& p) override {
    return real_.OpenReadable(p);
  }
  void CreateDir(const std::string& p) override { real_.CreateDir(p); }
  std::vector<std::string> ListDir(const std::string& p) override { return real_.ListDir(p); }
  bool Exists(const std::string& p) override { return real_.Exists(p); }
  void Rename(const std::string& a, const std::string& b) override { real_.Rename(a, b); }
  void SyncDir(const std::string& p) override { real_.SyncDir(p); }
  void RemoveAll(const std::string& p) override { real_.RemoveAll(p); }

 private:
  class File final : public WritableFile {
   public:
    File(HookedFileSystem* owner, std::string path, std::unique_ptr<WritableFile> real)
        : owner_(owner), path_(std::move(path)), real_(std::move(real)) {}
    void Append(std::span<const std::byte> data) override {
      if (owner_->on_append) owner_->on_append(path_, data.size());
      real_->Append(data);
    }
    void Sync() override { real_->Sync(); }
    void Close() override { real_->Close(); }

   private:
    HookedFileSystem* owner_;
    std::string path_;
    std::unique_ptr<WritableFile> real_;
  };
  PosixFileSystem real_;
};

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "replay_ckpt_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/checkpoints";
  }
  void TearDown() override { fs::remove_all(root_); }

  static TableOptions Options() {
    TableOptions options = TestOptions(8, SelectorKind::kPrioritized);
    options.rate_limiter = RateLimiterOptions::MinSize(1);
    return options;
  }
  // Inserts items [first, first + n) with priority 1 + item.
  static std::vector<std::uint64_t> Fill(Table& table, std::int64_t n, std::int64_t first) {
    TestBatch data(n, first);
    std::vector<double> priorities;
    for (std::int64_t i = 0; i < n; ++i) priorities.push_back(1.0 + static_cast<double>(first + i));
    return table.Insert(data.Get(priorities, /*version=*/first));
  }
  std::string LatestPath() const {
    return Checkpointer({.directory = dir_}).CheckpointPath(LatestSequence());
  }
  std::int64_t LatestSequence() const {
    std::int64_t latest = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      latest =
          std::max<std::int64_t>(latest, std::stoll(entry.path().filename().string().substr(5)));
    }
    return latest;
  }

  std::string root_;
  std::string dir_;
};

TEST_F(CheckpointerTest, RoundTripRestoresItemsKeysCountersAndSettings) {
  Table table(Options());
  const auto evicted = Fill(table, 3, 0);
  const auto kept = Fill(table, 7, 3);  // capacity 8: items 0 and 1 are evicted
  table.Sample({.batch_size = 5});
  table.UpdatePriorities(std::span(kept).first(1), std::vector<double>{42.0});
  table.Reconfigure({.rate_limiter = RateLimiterOptions::MinSize(2),
                     .max_times_sampled = 100,
                     .alpha = 0.9,
                     .beta = 0.7});
  const TableInfo before = table.Info();

  Checkpointer checkpointer({.directory = dir_});
  const CheckpointInfo written = checkpointer.Write(table);
  EXPECT_EQ(written.sequence, 1);
  EXPECT_EQ(written.items, 8);

  auto loaded = checkpointer.LoadNewest(Options());
  ASSERT_TRUE(loaded.has_value());
  Table& restored = *loaded->table;
  const TableInfo after = restored.Info();
  EXPECT_EQ(after.size, 8);
  EXPECT_EQ(after.counters.inserted, before.counters.inserted);
  EXPECT_EQ(after.counters.sampled, 5);
  EXPECT_EQ(after.next_key_seq, before.next_key_seq);
  EXPECT_EQ(after.selector.alpha, 0.9);
  EXPECT_EQ(after.selector.beta, 0.7);
  EXPECT_EQ(after.max_times_sampled, 100);
  EXPECT_EQ(after.rate_limiter.options.min_size_to_sample, 2);
  EXPECT_EQ(after.rate_limiter.counts.inserts, before.rate_limiter.counts.inserts);
  EXPECT_EQ(after.priorities.sum, before.priorities.sum);

  // Same keys, same bytes per key.
  std::map<std::uint64_t, std::int64_t> item_of;
  for (std::size_t i = 0; i < kept.size(); ++i) item_of[kept[i]] = 3 + static_cast<std::int64_t>(i);
  item_of[evicted[2]] = 2;
  const SampledBatch batch = restored.Sample({.batch_size = 64});
  for (std::size_t b = 0; b < 64; ++b) {
    const std::int64_t item = item_of.at(batch.keys[b]);
    EXPECT_EQ(FieldAt<std::int64_t>(batch.fields[1], b), item);
    EXPECT_EQ(FieldAt<float>(batch.fields[0], 4 * b), static_cast<float>(item));
    EXPECT_EQ(batch.policy_versions[b], item < 3 ? 0 : 3);
  }
  // Evicted keys stay unknown; the FIFO order survives (item 2 goes next);
  // new keys continue the sequence.
  const auto fresh = Fill(restored, 1, 100);
  EXPECT_GT(fresh[0], kept.back());
  std::vector<std::uint64_t> probe = {evicted[0], evicted[2], kept[0]};
  const auto result = restored.UpdatePriorities(probe, std::vector<double>(3, 1.0));
  EXPECT_EQ(result.updated, 1);
  EXPECT_EQ(result.ignored, 2);
}

TEST_F(CheckpointerTest, EmptyTableAndEmptyDirectory) {
  Checkpointer checkpointer({.directory = dir_});
  EXPECT_FALSE(checkpointer.LoadNewest(Options()).has_value());  // no directory yet
  Table table(Options());
  checkpointer.Write(table);
  auto loaded = checkpointer.LoadNewest(Options());
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->table->Info().size, 0);
}

TEST_F(CheckpointerTest, KeepsOnlyTheNewestCheckpoints) {
  Table table(Options());
  Checkpointer checkpointer({.directory = dir_, .keep_last = 2});
  for (int i = 0; i < 4; ++i) {
    Fill(table, 1, i);
    checkpointer.Write(table);
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{checkpointer.CheckpointPath(3).substr(dir_.size() + 1),
                                      checkpointer.CheckpointPath(4).substr(dir_.size() + 1)}));
}

TEST_F(CheckpointerTest, IncompatibleCheckpointIsAnError) {
  Table table(Options());
  Checkpointer checkpointer({.directory = dir_});
  checkpointer.Write(table);
  TableOptions bigger = Options();
  bigger.capacity = 16;
  EXPECT_THROW(checkpointer.LoadNewest(bigger), FailedPrecondition);
}

enum class Damage {
  kTruncateData,
  kFlipDataByte,
  kMissingManifest,
  kBadManifestJson,
  kFlipManifestByte,
  kExtraDataByte
};

class CorruptionTest : public CheckpointerTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(CorruptionTest, CorruptNewestIsSkippedForThePreviousGoodOne) {
  Table table(Options());
  Checkpointer checkpointer({.directory = dir_, .keep_last = 5});
  Fill(table, 3, 0);
  checkpointer.Write(table);  // good: 3 items
  Fill(table, 2, 3);
  checkpointer.Write(table);  // to be damaged: 5 items
  const std::string data = LatestPath() + "/data.bin";
  const std::string manifest = LatestPath() + "/MANIFEST.json";
  switch (GetParam()) {
    case Damage::kTruncateData:
      fs::resize_file(data, fs::file_size(data) - 9);
      break;
    case Damage::kExtraDataByte:
      std::ofstream(data, std::ios::app) << 'x';
      break;
    case Damage::kFlipDataByte: {
      std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(data) - 3));  // inside a field column
      f.put('\x7f');
      break;
    }
    case Damage::kMissingManifest:
      fs::remove(manifest);
      break;
    case Damage::kBadManifestJson:
      std::ofstream(manifest, std::ios::trunc) << "{\"body\": {\"format\": ";
      break;
    case Damage::kFlipManifestByte: {
      std::ifstream in(manifest);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto at = text.find("\"next_seq\": ") + 12;  // a digit of next_seq
      text[at] = text[at] == '9' ? '8' : static_cast<char>(text[at] + 1);
      std::ofstream(manifest, std::ios::trunc) << text;
      break;
    }
  }
  auto loaded = checkpointer.LoadNewest(Options());
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->info.sequence, 1);
  EXPECT_EQ(loaded->table->Info().size, 3);
}

INSTANTIATE_TEST_SUITE_P(Damages, CorruptionTest,
                         ::testing::Values(Damage::kTruncateData, Damage::kFlipDataByte,
                                           Damage::kMissingManifest, Damage::kBadManifestJson,
                                           Damage::kFlipManifestByte, Damage::kExtraDataByte));

TEST_F(CheckpointerTest, NothingValidMeansNothingLoaded) {
  Table table(Options());
  Checkpointer checkpointer({.directory = dir_});
  checkpointer.Write(table);
  fs::remove(LatestPath() + "/data.bin");
  EXPECT_FALSE(checkpointer.LoadNewest(Options()).has_value());
}

TEST_F(CheckpointerTest, AFullDiskLeavesTheLastGoodCheckpointAndTheTableServing) {
  auto disk = std::make_shared<HookedFileSystem>();
  Checkpointer checkpointer({.directory = dir_}, disk);
  Table table(Options());
  Fill(table, 3, 0);
  checkpointer.Write(table);
  Fill(table, 4, 3);
  for (const char* failing : {"data.bin", "MANIFEST.json.tmp"}) {
    disk->on_append = [failing](const std::string& path, std::size_t) {
      if (path.ends_with(failing)) throw ResourceExhausted(path + ": No space left on device");
    };
    EXPECT_THROW(checkpointer.Write(table), ResourceExhausted) << failing;
    EXPECT_FALSE(fs::exists(checkpointer.CheckpointPath(2))) << "partial checkpoint left behind";
  }
  disk->on_append = nullptr;
  auto loaded = checkpointer.LoadNewest(Options());
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->table->Info().size, 3);
  // The table kept serving and releases its snapshots: writes go in place.
  Fill(table, 1, 7);
  EXPECT_EQ(table.Sample({.batch_size = 4}).size(), 4);
  EXPECT_EQ(checkpointer.Write(table).sequence, 2);
}

TEST_F(CheckpointerTest, ARealFullDiskOnATinyTmpfs) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  fs::create_directories(dir_);
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (no CAP_SYS_ADMIN)";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount(path.c_str()); }
  } unmount{dir_};
  TableOptions options = Options();
  options.capacity = 4096;  // 64 KiB of metadata alone for a full table
  Table table(options);
  Checkpointer checkpointer({.directory = dir_, .keep_last = 3});
  TestBatch small(10);
  table.Insert(small.Get());
  checkpointer.Write(table);
  TestBatch big(3000, 10);
  table.Insert(big.Get());
  EXPECT_THROW(checkpointer.Write(table), ResourceExhausted);
  auto loaded = checkpointer.LoadNewest(options);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->table->Info().size, 10);
}

// The checkpoint is written without the table lock, from a snapshot taken at
// the start: while the writer is stuck in its first write, the table
// inserts and samples, and the checkpoint still holds the earlier state.
TEST_F(CheckpointerTest, WritingDoesNotHoldTheTableAndSeesOneConsistentState) {
  auto disk = std::make_shared<HookedFileSystem>();
  std::mutex mu;
  std::condition_variable cv;
  bool writer_stuck = false;
  bool release = false;
  disk->on_append = [&](const std::string&, std::size_t) {
    std::unique_lock<std::mutex> lock(mu);
    writer_stuck = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  Checkpointer checkpointer({.directory = dir_}, disk);
  Table table(Options());
  const auto old_keys = Fill(table, 5, 0);
  std::thread writer([&] { checkpointer.Write(table); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return writer_stuck; });
  }
  Fill(table, 6, 5);  // evicts, overwrites slots the snapshot still reads
  table.UpdatePriorities(old_keys, std::vector<double>(5, 9.0));
  EXPECT_EQ(table.Sample({.batch_size = 8}).size(), 8);
  EXPECT_GT(table.Info().chunks_copied, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  writer.join();

  auto loaded = checkpointer.LoadNewest(Options());
  ASSERT_TRUE(loaded.has_value());
  const TableInfo info = loaded->table->Info();
  EXPECT_EQ(info.size, 5);
  EXPECT_EQ(info.counters.sampled, 0);
  EXPECT_EQ(info.priorities.sum, 1.0 + 2 + 3 + 4 + 5);
}

}  // namespace
}  // namespace rlswarm::replay
