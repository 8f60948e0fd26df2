#include "replay/column_store.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rlswarm::replay {
namespace {

TEST(ColumnStoreTest, StartsZeroedAndStoresRows) {
  ColumnStore store({8, 3}, 10, 4);
  EXPECT_EQ(store.Get<std::int64_t>(0, 9), 0);
  store.Set<std::int64_t>(0, 9, 42);
  EXPECT_EQ(store.Get<std::int64_t>(0, 9), 42);
  std::memcpy(store.MutableRow(1, 5), "abc", 3);
  EXPECT_EQ(std::memcmp(store.Row(1, 5), "abc", 3), 0);
}

TEST(ColumnStoreTest, SnapshotSeesTheStateWhenTakenAndCopiesOnlyWrittenChunks) {
  ColumnStore store({8}, 16, 4);  // 4 chunks of 4 rows
  for (std::int64_t row = 0; row < 16; ++row) store.Set<std::int64_t>(0, row, row);
  ColumnStore::Snapshot snapshot = store.TakeSnapshot();
  store.Set<std::int64_t>(0, 1, 100);   // chunk 0: copied
  store.Set<std::int64_t>(0, 2, 200);   // chunk 0 again: already private
  store.Set<std::int64_t>(0, 13, 300);  // chunk 3: copied
  EXPECT_EQ(store.chunks_copied(), 2);
  EXPECT_EQ(snapshot.Get<std::int64_t>(0, 1), 1);
  EXPECT_EQ(snapshot.Get<std::int64_t>(0, 2), 2);
  EXPECT_EQ(snapshot.Get<std::int64_t>(0, 13), 13);
  EXPECT_EQ(store.Get<std::int64_t>(0, 1), 100);
  EXPECT_EQ(store.Get<std::int64_t>(0, 13), 300);

  store.ReleaseSnapshot();
  snapshot = ColumnStore::Snapshot();
  store.Set<std::int64_t>(0, 5, 500);  // no snapshot: in place
  EXPECT_EQ(store.chunks_copied(), 2);
}

TEST(ColumnStoreTest, OverlappingSnapshotsEachKeepTheirView) {
  ColumnStore store({8}, 8, 8);
  ColumnStore::Snapshot first = store.TakeSnapshot();
  store.Set<std::int64_t>(0, 0, 1);
  ColumnStore::Snapshot second = store.TakeSnapshot();
  store.Set<std::int64_t>(0, 0, 2);
  EXPECT_EQ(first.Get<std::int64_t>(0, 0), 0);
  EXPECT_EQ(second.Get<std::int64_t>(0, 0), 1);
  EXPECT_EQ(store.Get<std::int64_t>(0, 0), 2);
  store.ReleaseSnapshot();
  store.ReleaseSnapshot();
}

}  // namespace
}  // namespace rlswarm::replay
