// Frame-stacked fields: a table stores each distinct frame once (FramePool)
// and still returns every item exactly as inserted, through eviction,
// removal while sampled, snapshots and checkpoints.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/errors.h"
#include "replay/checkpoints/checkpointer.h"
#include "replay/frame_pool.h"
#include "replay/table.h"

namespace rlswarm::replay {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kStack = 4;   // frames per observation
constexpr std::int64_t kNStep = 3;   // next observation = the observation 3 steps on
constexpr std::int64_t kHeight = 6;  // frame shape [6, 10], uint8
constexpr std::int64_t kWidth = 10;
constexpr std::size_t kFrameBytes = kHeight * kWidth;

// Frame t of stream s: distinct for every (s, t), the same every time.
std::vector<std::uint8_t> StreamFrame(std::int64_t s, std::int64_t t) {
  std::vector<std::uint8_t> frame(kFrameBytes);
  std::uint64_t x = static_cast<std::uint64_t>(s * 1'000'003 + t) * 0x9E3779B97F4A7C15ull + 1;
  for (auto& byte : frame) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    byte = static_cast<std::uint8_t>(x >> 56);
  }
  return frame;
}

// Observation t of stream s: frames t .. t + kStack - 1.
std::vector<std::uint8_t> StreamObservation(std::int64_t s, std::int64_t t) {
  std::vector<std::uint8_t> out;
  for (std::int64_t k = 0; k < kStack; ++k) {
    const auto frame = StreamFrame(s, t + k);
    out.insert(out.end(), frame.begin(), frame.end());
  }
  return out;
}

Signature FrameSignature() {
  return {{{"observation", DType::kUInt8, {kStack, kHeight, kWidth}},
           {"stream", DType::kInt64, {}},
           {"step", DType::kInt64, {}},
           {"next_observation", DType::kUInt8, {kStack, kHeight, kWidth}}}};
}

TableOptions FrameOptions(std::int64_t capacity, std::int64_t max_times_sampled = 0) {
  TableOptions options;
  options.name = "frames";
  options.signature = FrameSignature();
  options.capacity = capacity;
  options.max_times_sampled = max_times_sampled;
  options.chunk_rows = 8;  // small chunks: copy-on-write and lazy allocation get exercised
  options.frame_fields = {"observation", "next_observation"};
  return options;
}

// Items of a vector env's steps: item (s, t) is the n-step transition from
// observation t of stream s to observation t + kNStep.
class StreamBatch {
 public:
  void Add(std::int64_t s, std::int64_t t) {
    const auto obs = StreamObservation(s, t);
    const auto next = StreamObservation(s, t + kNStep);
    observation_.insert(observation_.end(), obs.begin(), obs.end());
    next_.insert(next_.end(), next.begin(), next.end());
    stream_.push_back(s);
    step_.push_back(t);
  }
  InsertBatch Get() {
    const auto n = static_cast<std::int64_t>(stream_.size());
    obs_shape_ = {n, kStack, kHeight, kWidth};
    scalar_shape_ = {n};
    InsertBatch batch;
    batch.fields = {
        {"observation", DType::kUInt8, obs_shape_, std::as_bytes(std::span(observation_))},
        {"stream", DType::kInt64, scalar_shape_, std::as_bytes(std::span(stream_))},
        {"step", DType::kInt64, scalar_shape_, std::as_bytes(std::span(step_))},
        {"next_observation", DType::kUInt8, obs_shape_, std::as_bytes(std::span(next_))}};
    return batch;
  }

 private:
  std::vector<std::uint8_t> observation_, next_;
  std::vector<std::int64_t> stream_, step_;
  std::vector<std::int64_t> obs_shape_, scalar_shape_;
};

// Inserts steps [first, last) of `streams` interleaved streams, `per_batch`
// items per insert (batches cut across streams, as a writer's do).
void InsertStreams(Table& table, int streams, std::int64_t first, std::int64_t last,
                   int per_batch) {
  StreamBatch batch;
  int in_batch = 0;
  for (std::int64_t t = first; t < last; ++t) {
    for (int s = 0; s < streams; ++s) {
      batch.Add(s, t);
      if (++in_batch == per_batch) {
        table.Insert(batch.Get());
        batch = StreamBatch();
        in_batch = 0;
      }
    }
  }
  if (in_batch > 0) table.Insert(batch.Get());
}

template <class T>
T At(const SampledField& field, std::int64_t i) {
  T value;
  std::memcpy(&value, field.data.get() + i * sizeof(T), sizeof(T));
  return value;
}

// Every draw's observation and next observation are its stream's frames.
void ExpectItemsAsInserted(const SampledBatch& batch) {
  ASSERT_GT(batch.size(), 0);
  const std::size_t obs_bytes = kStack * kFrameBytes;
  for (std::int64_t i = 0; i < batch.size(); ++i) {
    const auto s = At<std::int64_t>(batch.fields[1], i);
    const auto t = At<std::int64_t>(batch.fields[2], i);
    const auto obs = StreamObservation(s, t);
    const auto next = StreamObservation(s, t + kNStep);
    ASSERT_EQ(std::memcmp(batch.fields[0].data.get() + i * obs_bytes, obs.data(), obs_bytes), 0)
        << "observation of stream " << s << " step " << t;
    ASSERT_EQ(std::memcmp(batch.fields[3].data.get() + i * obs_bytes, next.data(), obs_bytes), 0)
        << "next observation of stream " << s << " step " << t;
  }
}

TEST(FramePoolTest, EqualFramesAreStoredOnceAndFreedWithTheirLastReference) {
  FramePool pool(kFrameBytes, 100, 4);
  const auto a = StreamFrame(0, 0);
  const auto b = StreamFrame(0, 1);
  const auto* pa = reinterpret_cast<const std::byte*>(a.data());
  const auto* pb = reinterpret_cast<const std::byte*>(b.data());
  const FrameId a1 = pool.Acquire(pa, FramePool::Hash(pa, kFrameBytes));
  const FrameId a2 = pool.Acquire(pa, FramePool::Hash(pa, kFrameBytes));
  const FrameId b1 = pool.Acquire(pb, FramePool::Hash(pb, kFrameBytes));
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b1);
  EXPECT_EQ(pool.live_frames(), 2);
  EXPECT_EQ(pool.stored(), 2);
  EXPECT_EQ(pool.acquired(), 3);
  pool.Release(a1);
  EXPECT_EQ(pool.live_frames(), 2);  // a2 still holds it
  pool.Release(a2);
  EXPECT_EQ(pool.live_frames(), 1);
  // A new frame reuses the freed id; the old bytes are no longer found.
  const auto c = StreamFrame(0, 2);
  const auto* pc = reinterpret_cast<const std::byte*>(c.data());
  const FrameId c1 = pool.Acquire(pc, FramePool::Hash(pc, kFrameBytes));
  EXPECT_EQ(c1, a1);
  EXPECT_EQ(std::memcmp(pool.Frame(c1), c.data(), kFrameBytes), 0);
  const FrameId a3 = pool.Acquire(pa, FramePool::Hash(pa, kFrameBytes));
  EXPECT_NE(a3, c1);
  EXPECT_EQ(std::memcmp(pool.Frame(a3), a.data(), kFrameBytes), 0);
}

TEST(FramePoolTest, FramesWithTheSameHashButOtherBytesAreNeverMerged) {
  FramePool pool(kFrameBytes, 100, 4);
  const auto a = StreamFrame(1, 0);
  const auto b = StreamFrame(1, 1);
  const std::uint64_t same_hash = 42;
  const FrameId ia = pool.Acquire(reinterpret_cast<const std::byte*>(a.data()), same_hash);
  const FrameId ib = pool.Acquire(reinterpret_cast<const std::byte*>(b.data()), same_hash);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(std::memcmp(pool.Frame(ia), a.data(), kFrameBytes), 0);
  EXPECT_EQ(std::memcmp(pool.Frame(ib), b.data(), kFrameBytes), 0);
  pool.Release(ib);  // the unindexed one: the index keeps pointing at a
  EXPECT_EQ(pool.Acquire(reinterpret_cast<const std::byte*>(a.data()), same_hash), ia);
}

TEST(FramePoolTest, ARestoreRefusesAFrameTwiceAndAReferenceToAFrameItLacks) {
  const auto a = StreamFrame(2, 0);
  const auto bytes = std::as_bytes(std::span(a));
  FramePool twice(kFrameBytes, 100, 4);
  twice.RestoreFrame(7, bytes);
  EXPECT_THROW(twice.RestoreFrame(7, bytes), DataLoss);
  EXPECT_THROW(twice.RestoreFrame(100, bytes), InvalidArgument);  // out of range
  FramePool missing(kFrameBytes, 100, 4);
  missing.RestoreFrame(7, bytes);
  const std::vector<FrameId> references = {7, 7, 8};
  EXPECT_THROW(missing.FinishRestore(references), DataLoss);
  FramePool restored(kFrameBytes, 100, 4);
  restored.RestoreFrame(7, bytes);
  const std::vector<FrameId> held = {7, 7};
  restored.FinishRestore(held);
  EXPECT_EQ(restored.live_frames(), 1);
  const auto* p = reinterpret_cast<const std::byte*>(a.data());
  EXPECT_EQ(restored.Acquire(p, FramePool::Hash(p, kFrameBytes)), 7u);  // indexed again
}

TEST(FrameLayoutTest, BadFrameFieldsAreRejectedNamingTheField) {
  TableOptions options = FrameOptions(10);
  options.frame_fields = {"observation", "missing"};
  EXPECT_THROW(
      {
        try {
          options.Validate();
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos) << e.what();
          throw;
        }
      },
      InvalidArgument);
  options.frame_fields = {"stream"};  // a scalar: no stack of frames
  EXPECT_THROW(options.Validate(), InvalidArgument);
  options.frame_fields = {"observation", "observation"};
  EXPECT_THROW(options.Validate(), InvalidArgument);
  options.signature.fields[3].shape = {kStack, kHeight, kWidth + 1};
  options.frame_fields = {"observation", "next_observation"};
  EXPECT_THROW(options.Validate(), InvalidArgument);
}

TEST(FrameTableTest, SamplesReturnEveryFrameAsInsertedAndEachFrameIsStoredOnce) {
  Table table(FrameOptions(1000));
  constexpr int kStreams = 3;
  constexpr std::int64_t kSteps = 100;
  InsertStreams(table, kStreams, 0, kSteps, 7);
  ExpectItemsAsInserted(table.Sample({.batch_size = 600}));

  const TableInfo info = table.Info();
  EXPECT_EQ(info.size, kStreams * kSteps);
  // Stream s holds frames 0 .. kSteps - 1 + kNStep + kStack - 1, each once.
  EXPECT_EQ(info.frames.live, kStreams * (kSteps + kNStep + kStack - 1));
  EXPECT_EQ(info.frames.acquired, info.size * 2 * kStack);
  EXPECT_EQ(info.frames.stored, info.frames.live);
  EXPECT_EQ(info.frames.frame_bytes, kFrameBytes);
  // Stored inline, an item would hold 2 * kStack frames; the pool's own
  // bookkeeping (ids, counts, hash index) weighs on frames this small.
  EXPECT_LT(info.frames.memory_bytes, static_cast<std::size_t>(info.size) * kStack * kFrameBytes);
}

TEST(FrameTableTest, EvictionFreesTheFramesNoItemHolds) {
  constexpr std::int64_t kCapacity = 40;
  Table table(FrameOptions(kCapacity));
  constexpr int kStreams = 2;
  InsertStreams(table, kStreams, 0, 500, 5);
  const TableInfo info = table.Info();
  EXPECT_EQ(info.size, kCapacity);
  // The newest kCapacity items: kCapacity / kStreams steps per stream.
  EXPECT_EQ(info.frames.live, kStreams * (kCapacity / kStreams + kNStep + kStack - 1));
  ExpectItemsAsInserted(table.Sample({.batch_size = 200}));
}

TEST(FrameTableTest, ItemsRemovedByTheirLastSampleStillReturnTheirFrames) {
  Table table(FrameOptions(100, /*max_times_sampled=*/1));
  InsertStreams(table, 2, 0, 30, 4);
  // Each draw removes its item and frees its frames within the same call.
  const SampledBatch batch = table.Sample({.batch_size = 60});
  EXPECT_EQ(batch.size(), 60);
  ExpectItemsAsInserted(batch);
  EXPECT_EQ(table.Info().size, 0);
  EXPECT_EQ(table.Info().frames.live, 0);
  // Freed ids are reused and hold the new frames.
  InsertStreams(table, 2, 1000, 1010, 3);
  ExpectItemsAsInserted(table.Sample({.batch_size = 20}));
}

TEST(FrameTableTest, ASnapshotKeepsItsFramesWhileTheTableEvictsAndReusesThem) {
  Table table(FrameOptions(20));
  InsertStreams(table, 1, 0, 20, 3);
  TableSnapshot snapshot = table.TakeSnapshot();
  std::vector<std::vector<std::byte>> before;  // every item's observation, as the snapshot sees it
  const auto read = [&](const TableSnapshot& snap) {
    std::vector<std::vector<std::byte>> out;
    for (std::int64_t slot = 0; slot < 20; ++slot) {
      std::vector<std::byte> obs;
      const std::byte* ids = snap.columns().Row(1, slot);
      for (std::int64_t j = 0; j < kStack; ++j) {
        FrameId id;
        std::memcpy(&id, ids + j * sizeof(FrameId), sizeof(FrameId));
        const std::byte* frame = snap.frames().Row(0, id);
        obs.insert(obs.end(), frame, frame + kFrameBytes);
      }
      out.push_back(std::move(obs));
    }
    return out;
  };
  before = read(snapshot);
  InsertStreams(table, 1, 500, 540, 3);  // evicts every item, reuses every freed frame id
  EXPECT_EQ(read(snapshot), before);
  EXPECT_GT(table.Info().chunks_copied, 0);
}

class FrameCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rlswarm_frame_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FrameCheckpointTest, ARestoredTableHoldsTheSameItemsFramesAndPriorities) {
  Table table(FrameOptions(64));
  InsertStreams(table, 2, 0, 50, 6);  // evicts: frame ids are scattered and partly free
  const SampledBatch drawn = table.Sample({.batch_size = 10});
  std::vector<double> priorities(drawn.keys.size());
  for (std::size_t i = 0; i < priorities.size(); ++i) priorities[i] = 0.5 + static_cast<double>(i);
  table.UpdatePriorities(drawn.keys, priorities);
  Checkpointer checkpointer({.directory = dir_.string()});
  const CheckpointInfo written = checkpointer.Write(table);
  // Frames once: far less than 2 * kStack frames per item.
  EXPECT_LT(written.data_bytes, static_cast<std::uint64_t>(written.items) * kStack * kFrameBytes);

  auto loaded = checkpointer.LoadNewest(FrameOptions(64));
  ASSERT_TRUE(loaded.has_value());
  Table& restored = *loaded->table;
  const TableInfo a = table.Info();
  const TableInfo b = restored.Info();
  EXPECT_EQ(b.size, a.size);
  EXPECT_EQ(b.frames.live, a.frames.live);
  EXPECT_DOUBLE_EQ(b.priorities.sum, a.priorities.sum);
  ExpectItemsAsInserted(restored.Sample({.batch_size = 300}));
  // The restored pool keeps sharing: the frames of a step it holds are found.
  InsertStreams(restored, 1, 49, 50, 1);  // step 49 of stream 0 again
  EXPECT_EQ(restored.Info().frames.acquired, 2 * kStack);
  EXPECT_EQ(restored.Info().frames.stored, 0);
  ExpectItemsAsInserted(restored.Sample({.batch_size = 300}));
}

TEST_F(FrameCheckpointTest, ACheckpointWithACorruptFrameIsSkipped) {
  Table table(FrameOptions(16));
  InsertStreams(table, 1, 0, 10, 4);
  Checkpointer checkpointer({.directory = dir_.string()});
  const CheckpointInfo written = checkpointer.Write(table);
  {
    std::fstream data(written.path + "/data.bin", std::ios::in | std::ios::out | std::ios::binary);
    data.seekp(static_cast<std::streamoff>(written.data_bytes) - 5);  // in the last frame
    data.put('\x7f');
  }
  EXPECT_FALSE(checkpointer.LoadNewest(FrameOptions(16)).has_value());
}

TEST_F(FrameCheckpointTest, RestoringIntoATableWithOtherFrameFieldsIsAConfigurationError) {
  Table table(FrameOptions(16));
  InsertStreams(table, 1, 0, 10, 4);
  Checkpointer checkpointer({.directory = dir_.string()});
  checkpointer.Write(table);
  TableOptions inline_fields = FrameOptions(16);
  inline_fields.frame_fields.clear();
  EXPECT_THROW(checkpointer.LoadNewest(inline_fields), FailedPrecondition);
}

}  // namespace
}  // namespace rlswarm::replay
