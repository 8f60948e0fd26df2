// Waiting: blocking calls with deadlines and Close(), the non-blocking Try*
// calls, and the callback API a server with deferred replies uses. Threads
// synchronise on the table's own state (Info().rate_limiter.pending_*),
// never on sleeps.

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "common/errors.h"
#include "replay/table.h"
#include "replay/test_util.h"

namespace rlswarm::replay {
namespace {

using namespace std::chrono_literals;
using testing::In;
using testing::TestBatch;
using testing::TestOptions;
using testing::WaitFor;

// Inserts wait once the cursor would pass 2; samples wait below 0.
TableOptions RatioOptions() {
  TableOptions options = TestOptions(100);
  options.rate_limiter = RateLimiterOptions::SampleToInsertRatio(1.0, 1, 1.0);
  return options;
}

std::int64_t PendingSamples(const Table& table) {
  return table.Info().rate_limiter.pending_samples;
}
std::int64_t PendingInserts(const Table& table) {
  return table.Info().rate_limiter.pending_inserts;
}

TEST(TableWaitTest, TrySampleReturnsNulloptUntilMinSize) {
  TableOptions options = TestOptions(10);
  options.rate_limiter = RateLimiterOptions::MinSize(3);
  Table table(options);
  TestBatch two(2);
  table.Insert(two.Get());
  EXPECT_FALSE(table.TrySample({.batch_size = 4}).has_value());
  TestBatch one(1, 2);
  ASSERT_TRUE(table.TryInsert(one.Get()).has_value());
  EXPECT_TRUE(table.TrySample({.batch_size = 4}).has_value());
}

TEST(TableWaitTest, TryInsertReturnsNulloptWhenTheRatioIsAhead) {
  Table table(RatioOptions());
  TestBatch one(1);
  ASSERT_TRUE(table.TryInsert(one.Get()).has_value());  // free until min size
  ASSERT_TRUE(table.TryInsert(one.Get()).has_value());  // cursor 2 <= max_diff 2
  EXPECT_FALSE(table.TryInsert(one.Get()).has_value());
  ASSERT_TRUE(table.TrySample({.batch_size = 1}).has_value());
  EXPECT_TRUE(table.TryInsert(one.Get()).has_value());
}

TEST(TableWaitTest, BlockedSampleProceedsWhenAnInsertAdmitsIt) {
  Table table(TestOptions(10));
  std::optional<SampledBatch> result;
  std::thread sampler([&] { result = table.Sample({.batch_size = 3}, In(60s)); });
  ASSERT_TRUE(WaitFor([&] { return PendingSamples(table) == 1; }));
  TestBatch data(1, 7);
  table.Insert(data.Get());
  sampler.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->size(), 3);
  EXPECT_EQ(table.Info().counters.samples_waited, 1);
}

TEST(TableWaitTest, BlockedInsertProceedsWhenASampleAdmitsIt) {
  Table table(RatioOptions());
  TestBatch one(1);
  table.Insert(one.Get());
  table.Insert(one.Get());
  std::atomic<bool> inserted = false;
  std::thread inserter([&] {
    table.Insert(one.Get(), In(60s));
    inserted = true;
  });
  ASSERT_TRUE(WaitFor([&] { return PendingInserts(table) == 1; }));
  EXPECT_FALSE(inserted);
  table.Sample({.batch_size = 1});
  inserter.join();
  EXPECT_TRUE(inserted);
  EXPECT_EQ(table.Info().size, 3);
}

TEST(TableWaitTest, BlockingCallsFailAtTheirDeadline) {
  Table table(RatioOptions());
  EXPECT_THROW(table.Sample({.batch_size = 1}, In(20ms)), DeadlineExceeded);
  TestBatch one(1);
  table.Insert(one.Get());
  table.Insert(one.Get());
  EXPECT_THROW(table.Insert(one.Get(), In(20ms)), DeadlineExceeded);
  const TableInfo info = table.Info();
  EXPECT_EQ(info.rate_limiter.pending_inserts + info.rate_limiter.pending_samples, 0);
  EXPECT_EQ(info.size, 2);  // the timed-out insert stored nothing
}

TEST(TableWaitTest, CloseWakesBlockedCallsWithCancelled) {
  Table table(RatioOptions());
  TestBatch one(1);
  Table other(RatioOptions());
  other.Insert(one.Get());
  other.Insert(one.Get());
  std::atomic<int> cancelled = 0;
  std::thread sampler([&] {
    try {
      table.Sample({.batch_size = 1});
    } catch (const Cancelled&) {
      ++cancelled;
    }
  });
  std::thread inserter([&] {
    try {
      other.Insert(one.Get());
    } catch (const Cancelled&) {
      ++cancelled;
    }
  });
  ASSERT_TRUE(WaitFor([&] { return PendingSamples(table) == 1 && PendingInserts(other) == 1; }));
  table.Close();
  other.Close();
  sampler.join();
  inserter.join();
  EXPECT_EQ(cancelled, 2);
  EXPECT_THROW(table.TrySample({.batch_size = 1}), Cancelled);
  EXPECT_THROW(table.Insert(one.Get()), Cancelled);
  EXPECT_THROW(table.UpdatePriorities({}, {}), Cancelled);
  EXPECT_TRUE(table.Info().closed);
}

TEST(TableWaitTest, SampleAsyncCompletesOnTheInsertThatAdmitsIt) {
  Table table(TestOptions(10));
  std::vector<std::int64_t> sizes;
  const auto done = [&](Result<SampledBatch> result) { sizes.push_back(result.value().size()); };
  table.SampleAsync({.batch_size = 2}, In(60s), done);
  table.SampleAsync({.batch_size = 3}, kNoDeadline, done);
  EXPECT_TRUE(sizes.empty());
  EXPECT_EQ(PendingSamples(table), 2);
  TestBatch data(1);
  table.Insert(data.Get());  // runs both callbacks, on this thread, FIFO
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{2, 3}));
  // Admissible at once: the callback runs before SampleAsync returns.
  table.SampleAsync({.batch_size = 1}, In(60s), done);
  EXPECT_EQ(sizes.size(), 3u);
}

TEST(TableWaitTest, InsertAsyncCompletesOnTheSampleThatAdmitsIt) {
  Table table(RatioOptions());
  TestBatch one(1);
  table.Insert(one.Get());
  table.Insert(one.Get());
  std::optional<std::vector<std::uint64_t>> keys;
  table.InsertAsync(one.Get(), In(60s), [&](auto result) { keys = result.value(); });
  EXPECT_FALSE(keys.has_value());
  table.Sample({.batch_size = 1});
  ASSERT_TRUE(keys.has_value());
  EXPECT_EQ(keys->size(), 1u);
}

TEST(TableWaitTest, AsyncWaitersExpireCancelAndClose) {
  Table table(TestOptions(10));
  std::vector<std::string> outcomes;
  const auto record = [&](Result<SampledBatch> result) {
    try {
      result.value();
      outcomes.push_back("ok");
    } catch (const DeadlineExceeded&) {
      outcomes.push_back("deadline");
    } catch (const Cancelled&) {
      outcomes.push_back("cancelled");
    }
  };
  const Deadline now = std::chrono::steady_clock::now();
  // A deadline already past completes at once.
  table.SampleAsync({.batch_size = 1}, now - 1s, record);
  EXPECT_EQ(outcomes, (std::vector<std::string>{"deadline"}));

  table.SampleAsync({.batch_size = 1}, now + 1h, record);
  const WaiterId dropped = table.SampleAsync({.batch_size = 1}, now + 3h, record);
  table.SampleAsync({.batch_size = 1}, now + 5h, record);
  EXPECT_EQ(table.NextWaiterDeadline(), now + 1h);
  EXPECT_EQ(table.ExpireWaiters(now + 2h), 1);
  EXPECT_EQ(outcomes.back(), "deadline");
  EXPECT_TRUE(table.CancelWaiter(dropped));
  EXPECT_FALSE(table.CancelWaiter(dropped));
  EXPECT_EQ(table.NextWaiterDeadline(), now + 5h);
  table.Close();
  EXPECT_EQ(outcomes, (std::vector<std::string>{"deadline", "deadline", "cancelled"}));
  EXPECT_EQ(table.Info().counters.waiters_expired, 1);
}

TEST(TableWaitTest, RemoteCountsAdmitWaitingSamples) {
  Table table(RatioOptions());
  TestBatch one(1);
  table.Insert(one.Get());
  table.Sample({.batch_size = 2});  // cursor 1 - 2 = -1: samples wait
  bool sampled = false;
  table.SampleAsync({.batch_size = 1}, kNoDeadline, [&](auto r) { sampled = r.ok(); });
  EXPECT_FALSE(sampled);
  table.SetRemoteCounts(/*inserts=*/2, /*samples=*/0);  // another shard's inserts
  EXPECT_TRUE(sampled);
}

// Several threads insert, sample, update priorities and take snapshots at
// once; run under ThreadSanitizer, this checks the locking.
TEST(TableWaitTest, ConcurrentCallsAreSafe) {
  TableOptions options = TestOptions(64, SelectorKind::kPrioritized);
  options.rate_limiter = RateLimiterOptions::SampleToInsertRatio(2.0, 8, 64.0);
  options.max_times_sampled = 50;
  Table table(options);
  constexpr int kBatches = 150;
  std::atomic<int> writers_done = 0;
  std::vector<std::thread> writers;
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      TestBatch data(4, w * 1000);
      try {
        for (int i = 0; i < kBatches; ++i) table.Insert(data.Get({}, i), In(30s));
      } catch (const Cancelled&) {
      }
      ++writers_done;
    });
  }
  std::atomic<std::int64_t> drawn = 0;
  for (int s = 0; s < 2; ++s) {
    threads.emplace_back([&] {
      try {
        while (true) {
          SampledBatch batch = table.Sample({.batch_size = 8}, In(30s));
          drawn += batch.size();
          std::vector<double> priorities(batch.keys.size(), 0.5);
          table.UpdatePriorities(batch.keys, priorities);
        }
      } catch (const Cancelled&) {
      }
    });
  }
  threads.emplace_back([&] {
    while (writers_done < 2) {
      TableSnapshot snapshot = table.TakeSnapshot();
      std::int64_t live = 0;
      for (std::int64_t slot = 0; slot < snapshot.capacity(); ++slot) {
        live += snapshot.columns().Get<ItemMeta>(kMetaColumn, slot).key != 0;
      }
      EXPECT_EQ(live, snapshot.state().size);
      table.Info();
    }
  });
  for (auto& t : writers) t.join();
  table.Close();
  for (auto& t : threads) t.join();
  EXPECT_EQ(table.Info().counters.inserted, 2 * kBatches * 4);
  EXPECT_GT(drawn, 0);
}

}  // namespace
}  // namespace rlswarm::replay
