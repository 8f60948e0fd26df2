#include "replay/table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/errors.h"
#include "replay/json.h"
#include "replay/test_util.h"

namespace rlswarm::replay {
namespace {

using testing::FieldAt;
using testing::TestBatch;
using testing::TestOptions;

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(TableTest, SampleGathersTheInsertedBytesPerField) {
  Table table(TestOptions(8));
  TestBatch data(3, /*first=*/10);
  const std::vector<std::uint64_t> keys = table.Insert(data.Get());
  ASSERT_EQ(keys.size(), 3u);
  std::map<std::uint64_t, std::int64_t> action_of;
  for (int i = 0; i < 3; ++i) action_of[keys[i]] = 10 + i;

  const SampledBatch batch = table.Sample({.batch_size = 16});
  ASSERT_EQ(batch.size(), 16);
  ASSERT_EQ(batch.fields.size(), 3u);
  EXPECT_EQ(batch.fields[0].shape, (std::vector<std::int64_t>{16, 4}));
  EXPECT_EQ(batch.fields[1].shape, (std::vector<std::int64_t>{16}));
  EXPECT_EQ(batch.fields[0].bytes().size(), 16u * 16u);
  for (std::size_t b = 0; b < 16; ++b) {
    const std::int64_t action = action_of.at(batch.keys[b]);
    EXPECT_EQ(FieldAt<std::int64_t>(batch.fields[1], b), action);
    EXPECT_EQ(FieldAt<float>(batch.fields[2], b), static_cast<float>(action));
    EXPECT_EQ(FieldAt<float>(batch.fields[0], 4 * b), static_cast<float>(action));
    EXPECT_EQ(FieldAt<float>(batch.fields[0], 4 * b + 3), 2.5f);
    EXPECT_DOUBLE_EQ(batch.probabilities[b], 1.0 / 3);
    EXPECT_DOUBLE_EQ(batch.weights[b], 1.0);
  }
}

TEST(TableTest, EvictsTheOldestItemFirstWhenFull) {
  Table table(TestOptions(3));
  TestBatch first(2, 0);
  TestBatch second(3, 2);
  const auto old_keys = table.Insert(first.Get());
  const auto new_keys = table.Insert(second.Get());
  EXPECT_EQ(table.Info().size, 3);
  EXPECT_EQ(table.Info().counters.evicted, 2);
  // Items 0 and 1 are gone: their keys are ignored (and counted).
  const std::vector<double> ones(5, 1.0);
  std::vector<std::uint64_t> all = old_keys;
  all.insert(all.end(), new_keys.begin(), new_keys.end());
  const PriorityUpdateResult result = table.UpdatePriorities(all, ones);
  EXPECT_EQ(result.updated, 3);
  EXPECT_EQ(result.ignored, 2);
  EXPECT_EQ(table.Info().counters.priority_updates_ignored, 2);
  const SampledBatch batch = table.Sample({.batch_size = 64});
  for (std::size_t b = 0; b < 64; ++b) EXPECT_GE(FieldAt<std::int64_t>(batch.fields[1], b), 2);
}

TEST(TableTest, EvictionSkipsItemsAlreadyRemovedAndKeepsFifoOrder) {
  TableOptions options = TestOptions(3, SelectorKind::kPrioritized);
  options.max_times_sampled = 1;
  Table table(options);
  TestBatch abc(3, 0);
  const std::vector<double> priorities = {0, 1, 0};  // only B can be drawn
  const auto keys = table.Insert(abc.Get(priorities));
  EXPECT_EQ(table.Sample({.batch_size = 1}).keys[0], keys[1]);  // B, removed after one draw
  EXPECT_EQ(table.Info().size, 2);
  TestBatch d(1, 3);
  const auto key_d = table.Insert(d.Get());
  EXPECT_EQ(table.Info().counters.evicted, 0);  // B's slot was free
  TestBatch e(1, 4);
  const auto key_e = table.Insert(e.Get());
  EXPECT_EQ(table.Info().counters.evicted, 1);
  // A (oldest) was evicted, not C.
  const std::vector<std::uint64_t> probe = {keys[0], keys[1], keys[2], key_d[0], key_e[0]};
  const PriorityUpdateResult result = table.UpdatePriorities(probe, std::vector<double>(5, 1.0));
  EXPECT_EQ(result.updated, 3);
  EXPECT_EQ(result.ignored, 2);
}

TEST(TableTest, MaxTimesSampledRemovesItemsAndShortensTheLastBatch) {
  TableOptions options = TestOptions(10);
  options.max_times_sampled = 2;
  Table table(options);
  TestBatch data(3);
  table.Insert(data.Get());
  std::map<std::uint64_t, std::int64_t> draws;
  while (auto batch = table.TrySample({.batch_size = 1})) {
    ++draws[batch->keys[0]];
    EXPECT_LE(batch->times_sampled[0], 2);
  }
  EXPECT_EQ(draws.size(), 3u);
  for (const auto& [key, n] : draws) EXPECT_EQ(n, 2);
  EXPECT_EQ(table.Info().size, 0);
  EXPECT_EQ(table.Info().counters.removed_max_times_sampled, 3);

  options.max_times_sampled = 1;
  Table once(options);
  TestBatch two(2);
  once.Insert(two.Get());
  const SampledBatch batch = once.Sample({.batch_size = 5});
  EXPECT_EQ(batch.size(), 2);  // ran out of items
  EXPECT_NE(batch.keys[0], batch.keys[1]);
  EXPECT_EQ(batch.fields[0].shape[0], 2);
  EXPECT_EQ(batch.fields[1].bytes().size(), 2 * sizeof(std::int64_t));
}

TEST(TableTest, ABadBatchIsRejectedWhole) {
  Table table(TestOptions(10));
  TestBatch data(4);
  InsertBatch bad = data.Get();
  bad.fields[2].dtype = DType::kFloat64;
  EXPECT_THROW(table.Insert(bad), InvalidArgument);
  const std::vector<double> nan_priority = {1, 1, std::nan(""), 1};
  EXPECT_THROW(table.Insert(data.Get(nan_priority)), InvalidArgument);
  const std::vector<double> too_few = {1, 1};
  EXPECT_THROW(table.Insert(data.Get(too_few)), InvalidArgument);
  TestBatch big(11);
  EXPECT_THROW(table.Insert(big.Get()), InvalidArgument);
  const TableInfo info = table.Info();
  EXPECT_EQ(info.size, 0);
  EXPECT_EQ(info.counters.inserted, 0);
  EXPECT_EQ(info.next_key_seq, 1u);
}

TEST(TableTest, BadPriorityUpdatesChangeNothing) {
  Table table(TestOptions(10, SelectorKind::kPrioritized));
  TestBatch data(3);
  const std::vector<double> priorities = {1, 2, 3};
  const auto keys = table.Insert(data.Get(priorities));
  for (double bad : {std::nan(""), -1.0, std::numeric_limits<double>::infinity()}) {
    const std::vector<double> update = {5, bad, 7};
    EXPECT_THROW(table.UpdatePriorities(keys, update), InvalidArgument);
  }
  EXPECT_THROW(table.UpdatePriorities(keys, std::vector<double>{1.0}), InvalidArgument);
  const TableInfo info = table.Info();
  EXPECT_EQ(info.priorities.sum, 6.0);
  EXPECT_EQ(info.counters.priorities_updated, 0);
}

TEST(TableTest, ImportanceWeightsFollowPriorities) {
  TableOptions options = TestOptions(4, SelectorKind::kPrioritized);
  options.selector.alpha = 1.0;
  options.selector.beta = 1.0;
  Table table(options);
  TestBatch data(2);
  const std::vector<double> priorities = {1, 3};
  const auto keys = table.Insert(data.Get(priorities));
  const SampledBatch batch = table.Sample({.batch_size = 64});
  std::set<std::uint64_t> seen;
  for (std::size_t b = 0; b < 64; ++b) {
    seen.insert(batch.keys[b]);
    // P = 1/4 and 3/4, N = 2: (N P)^-1 = 2 and 2/3, over the batch max 2.
    const bool first = batch.keys[b] == keys[0];
    EXPECT_DOUBLE_EQ(batch.probabilities[b], first ? 0.25 : 0.75);
    EXPECT_DOUBLE_EQ(batch.weights[b], first ? 1.0 : 1.0 / 3);
  }
  EXPECT_EQ(seen.size(), 2u);
}

TEST(TableTest, NewItemsWithoutPrioritiesGetTheLargestSoFar) {
  Table table(TestOptions(4, SelectorKind::kPrioritized));
  TestBatch data(2);
  const std::vector<double> priorities = {1, 5};
  table.Insert(data.Get(priorities));
  TestBatch more(1, 2);
  const auto key = table.Insert(more.Get());
  table.UpdatePriorities(key, std::vector<double>{5.0});  // no-op, but must be accepted
  EXPECT_EQ(table.Info().priorities.sum, 11.0);
}

TEST(TableTest, SameSeedSameSamples) {
  auto draw = [] {
    Table table(TestOptions(100, SelectorKind::kPrioritized));
    TestBatch data(50);
    std::vector<double> priorities;
    for (int i = 0; i < 50; ++i) priorities.push_back(1 + i % 7);
    table.Insert(data.Get(priorities));
    return table.Sample({.batch_size = 32}).keys;
  };
  EXPECT_EQ(draw(), draw());
}

// A seeded draw depends on the contents and the seed only: the table's own
// draws before it do not shift it (what a resumed learner relies on).
TEST(TableTest, ASeededDrawIgnoresTheDrawsBeforeIt) {
  for (SelectorKind kind : {SelectorKind::kUniform, SelectorKind::kPrioritized}) {
    Table table(TestOptions(100, kind));
    TestBatch data(50);
    std::vector<double> priorities;
    for (int i = 0; i < 50; ++i) priorities.push_back(1 + i % 7);
    table.Insert(data.Get(priorities));
    const std::vector<std::uint64_t> first = table.Sample({.batch_size = 32, .seed = 7}).keys;
    table.Sample({.batch_size = 13});  // advances the table's own stream
    EXPECT_EQ(table.Sample({.batch_size = 32, .seed = 7}).keys, first);
    EXPECT_NE(table.Sample({.batch_size = 32, .seed = 8}).keys, first);
    // Unseeded draws still follow the table's stream.
    EXPECT_NE(table.Sample({.batch_size = 32}).keys, table.Sample({.batch_size = 32}).keys);
  }
}

TEST(TableTest, StalenessMeasuresAgeAndPolicyLag) {
  auto clock = std::make_shared<ManualClock>(100 * kSecond);
  Table table(TestOptions(10), clock);
  TestBatch old_items(1, 0);
  table.Insert(old_items.Get({}, /*version=*/1));
  clock->Advance(2 * kSecond);
  TestBatch new_items(1, 1);
  table.Insert(new_items.Get({}, /*version=*/3));
  clock->Advance(1 * kSecond);

  const SampledBatch batch = table.Sample({.batch_size = 200, .policy_version = 5});
  std::int64_t old_draws = 0;
  for (std::size_t b = 0; b < 200; ++b) old_draws += batch.policy_versions[b] == 1;
  ASSERT_GT(old_draws, 0);
  ASSERT_LT(old_draws, 200);
  const StalenessInfo s = table.Info().staleness;
  EXPECT_EQ(s.recorded, 200);
  EXPECT_DOUBLE_EQ(s.age_seconds.max, 3.0);  // old items: inserted 3 s ago, lag 5 - 1
  EXPECT_DOUBLE_EQ(s.version_lag.max, 4.0);
  const double p50_age = old_draws > 100 ? 3.0 : 1.0;
  EXPECT_DOUBLE_EQ(s.age_seconds.p50, p50_age);
  EXPECT_DOUBLE_EQ(s.version_lag.p50, p50_age == 3.0 ? 4.0 : 2.0);

  // Without a version, the sampler is assumed to be at the newest inserted (3).
  Table fresh(TestOptions(10), clock);
  fresh.Insert(old_items.Get({}, 1));
  fresh.Insert(new_items.Get({}, 3));
  fresh.Sample({.batch_size = 50});
  EXPECT_DOUBLE_EQ(fresh.Info().staleness.version_lag.max, 2.0);
}

TEST(TableTest, ReconfiguresALiveTable) {
  TableOptions options = TestOptions(10, SelectorKind::kPrioritized);
  options.rate_limiter = RateLimiterOptions::MinSize(5);
  options.selector.alpha = 1.0;
  options.selector.beta = 1.0;
  Table table(options);
  TestBatch data(2);
  const std::vector<double> priorities = {1, 3};
  table.Insert(data.Get(priorities));
  EXPECT_FALSE(table.TrySample({.batch_size = 1}).has_value());

  table.Reconfigure({.rate_limiter = RateLimiterOptions::MinSize(1)});
  ASSERT_TRUE(table.TrySample({.batch_size = 8}).has_value());

  table.Reconfigure({.alpha = 0.0, .beta = 0.0});
  const SampledBatch uniform = table.Sample({.batch_size = 8});
  for (std::size_t b = 0; b < 8; ++b) {
    EXPECT_DOUBLE_EQ(uniform.probabilities[b], 0.5);
    EXPECT_DOUBLE_EQ(uniform.weights[b], 1.0);
  }

  // A bad change is rejected whole: alpha stays 0 although it was valid.
  EXPECT_THROW(table.Reconfigure({.alpha = 2.0, .beta = 1.5}), InvalidArgument);
  EXPECT_EQ(table.Info().selector.alpha, 0.0);

  // Every item has been sampled by now: max_times_sampled = 1 removes them all.
  table.Reconfigure({.max_times_sampled = 1});
  const TableInfo info = table.Info();
  EXPECT_EQ(info.size, 0);
  EXPECT_EQ(info.max_times_sampled, 1);
  EXPECT_EQ(info.counters.removed_max_times_sampled, 2);
  EXPECT_EQ(info.priorities.total, 0);
  EXPECT_EQ(info.priorities.sum, 0.0);
  EXPECT_EQ(info.rate_limiter.options.min_size_to_sample, 1);
}

TEST(TableTest, InfoReportsCountersHistogramAndRates) {
  auto clock = std::make_shared<ManualClock>(50 * kSecond);
  Table table(TestOptions(10, SelectorKind::kPrioritized), clock);
  TestBatch data(4);
  const std::vector<double> priorities = {0, 0.75, 3, 3.5};
  table.Insert(data.Get(priorities));
  clock->Advance(kSecond / 2);
  table.Sample({.batch_size = 6});
  clock->Advance(kSecond / 2);
  const TableInfo info = table.Info();
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.counters.inserted, 4);
  EXPECT_EQ(info.counters.sampled, 6);
  EXPECT_DOUBLE_EQ(info.insert_rate, 4.0);  // over the 1 s since the table was made
  EXPECT_DOUBLE_EQ(info.sample_rate, 6.0);
  EXPECT_EQ(info.priorities.zeros, 1);
  EXPECT_EQ(info.max_priority, 3.5);
  EXPECT_EQ(info.priorities.total, 4);
  // 0.75 in [0.5, 1); 3 and 3.5 in [2, 4).
  EXPECT_EQ(info.priorities.counts[-1 - PriorityHistogram::kMinExponent], 1);
  EXPECT_EQ(info.priorities.counts[1 - PriorityHistogram::kMinExponent], 2);
  EXPECT_EQ(info.rate_limiter.counts.samples, 6);
  EXPECT_TRUE(info.rate_limiter.can_sample);
  const nlohmann::json j = TableInfoToJson(info);
  EXPECT_EQ(j["size"], 4);
  EXPECT_EQ(j["priorities"]["bins"].size(), 2u);

  // The histogram follows updates and evictions.
  TestBatch more(8, 4);
  const auto keys = table.Insert(more.Get(std::vector<double>(8, 1.0)));  // evicts the first 2
  table.UpdatePriorities(std::span(keys).first(3), std::vector<double>(3, 0.0));
  const PriorityHistogram h = table.Info().priorities;
  EXPECT_EQ(h.total, 10);
  EXPECT_EQ(h.zeros, 3);
  EXPECT_EQ(h.counts[0 - PriorityHistogram::kMinExponent], 5);  // [1, 2)
  EXPECT_EQ(h.counts[1 - PriorityHistogram::kMinExponent], 2);  // 3, 3.5
  EXPECT_DOUBLE_EQ(h.sum, 5 + 3 + 3.5);
}

TEST(TableTest, OptionsAreValidated) {
  EXPECT_THROW(Table{TestOptions(0)}, InvalidArgument);
  TableOptions no_fields = TestOptions(4);
  no_fields.signature.fields.clear();
  EXPECT_THROW(Table{no_fields}, InvalidArgument);
  TableOptions bad_beta = TestOptions(4);
  bad_beta.selector.beta = 2;
  EXPECT_THROW(Table{bad_beta}, InvalidArgument);
  Table table(TestOptions(4));
  EXPECT_THROW(table.Sample({.batch_size = 0}), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::replay
