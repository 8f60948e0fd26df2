#include "replay/rate_limiter.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace rlswarm::replay {
namespace {

TEST(RateLimiterTest, MinSizeHoldsSamplesUntilEnoughItems) {
  RateLimiter limiter(RateLimiterOptions::MinSize(3));
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limiter.CanSample());
    EXPECT_TRUE(limiter.CanInsert());
    limiter.OnInserts(1);
  }
  EXPECT_TRUE(limiter.CanSample());
  limiter.OnSamples(1000);
  EXPECT_TRUE(limiter.CanSample());  // no ratio
  limiter.OnDeletes(1);
  EXPECT_FALSE(limiter.CanSample());  // back under min size
}

TEST(RateLimiterTest, SampleToInsertRatioFollowsReverb) {
  // offset = 2 * 2 = 4, cursor kept within [0, 8].
  const auto options = RateLimiterOptions::SampleToInsertRatio(2.0, 2, 4.0);
  EXPECT_EQ(options.min_diff, 0.0);
  EXPECT_EQ(options.max_diff, 8.0);
  RateLimiter limiter(options);
  // Inserts are free until min_size_to_sample items; then while the cursor
  // after the insert stays <= max_diff.
  int inserted = 0;
  while (limiter.CanInsert()) {
    limiter.OnInserts(1);
    ++inserted;
  }
  EXPECT_EQ(inserted, 4);
  EXPECT_EQ(limiter.Cursor(), 8.0);
  int sampled = 0;
  while (limiter.CanSample()) {
    limiter.OnSamples(1);
    ++sampled;
  }
  EXPECT_EQ(sampled, 8);  // down to min_diff = 0
  EXPECT_TRUE(limiter.CanInsert());
}

TEST(RateLimiterTest, ABatchIsAdmittedByItsFirstItemAndMovesTheCursorByAll) {
  RateLimiter limiter(RateLimiterOptions::SampleToInsertRatio(1.0, 1, 2.0));  // [-1, 3]
  limiter.OnInserts(3);
  ASSERT_TRUE(limiter.CanSample());
  limiter.OnSamples(256);  // far larger than the error buffer: no deadlock
  EXPECT_EQ(limiter.Cursor(), -253.0);
  EXPECT_FALSE(limiter.CanSample());
  EXPECT_TRUE(limiter.CanInsert());
  limiter.OnInserts(253);
  EXPECT_TRUE(limiter.CanSample());
}

TEST(RateLimiterTest, RemoteCountsEnterTheCursor) {
  RateLimiter limiter(RateLimiterOptions::SampleToInsertRatio(1.0, 1, 2.0));
  limiter.OnInserts(1);
  limiter.OnSamples(2);  // cursor -1: samples wait
  EXPECT_FALSE(limiter.CanSample());
  limiter.SetRemoteCounts(/*inserts=*/5, /*samples=*/0);  // other shards inserted
  EXPECT_EQ(limiter.Cursor(), 4.0);
  EXPECT_TRUE(limiter.CanSample());
  EXPECT_FALSE(limiter.CanInsert());
}

TEST(RateLimiterTest, ReconfigureKeepsCounters) {
  RateLimiter limiter(RateLimiterOptions::MinSize(1));
  limiter.OnInserts(10);
  limiter.Reconfigure(RateLimiterOptions::MinSize(20));
  EXPECT_EQ(limiter.counts().inserts, 10);
  EXPECT_FALSE(limiter.CanSample());
}

TEST(RateLimiterTest, ValidateRejectsBadOptions) {
  EXPECT_NO_THROW(RateLimiterOptions{}.Validate());
  EXPECT_NO_THROW(RateLimiterOptions::SampleToInsertRatio(4.0, 100, 4.0).Validate());
  EXPECT_THROW(RateLimiterOptions::SampleToInsertRatio(0.0, 1, 10).Validate(), InvalidArgument);
  EXPECT_THROW(RateLimiterOptions::MinSize(0).Validate(), InvalidArgument);
  // Window 2 * 0.5 = 1 < 2 * max(1, spi) = 2.
  EXPECT_THROW(RateLimiterOptions::SampleToInsertRatio(1.0, 10, 0.5).Validate(), InvalidArgument);
  RateLimiterOptions above;
  above.min_diff = 100;  // above spi * min_size = 1
  EXPECT_THROW(above.Validate(), InvalidArgument);
  RateLimiterOptions inverted;
  inverted.min_diff = 5;
  inverted.max_diff = -5;
  EXPECT_THROW(inverted.Validate(), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::replay
