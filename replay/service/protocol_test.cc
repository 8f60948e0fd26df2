// The replay wire format: round trips and what a malformed message gets.

#include "replay/service/protocol.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "replay/test_util.h"

namespace rlswarm::replay::protocol {
namespace {

TEST(ProtocolTest, GlobalKeysCarryTheirShard) {
  const std::uint64_t key = GlobalKey(200, 123456789);
  EXPECT_EQ(ShardOfKey(key), 200);
  EXPECT_EQ(LocalKey(key), 123456789u);
  EXPECT_THROW(GlobalKey(1, std::uint64_t{1} << 60), Internal);
}

TEST(ProtocolTest, InsertRoundTripsNamesFieldsPrioritiesAndVersion) {
  testing::TestBatch items(3, 10);
  const std::vector<double> priorities = {1, 2, 3};
  const std::vector<Payload> payloads = EncodeInsert(items.Get(priorities, 42));
  DecodedInsert decoded;
  DecodeInsert(payloads, decoded);
  ASSERT_EQ(decoded.fields.size(), 3u);
  EXPECT_EQ(decoded.fields[1].name, "action");
  EXPECT_EQ(decoded.fields[0].shape[1], 4);
  EXPECT_EQ(decoded.policy_version, 42);
  EXPECT_EQ(std::vector<double>(decoded.priorities.begin(), decoded.priorities.end()), priorities);
  std::vector<const std::byte*> ordered;
  EXPECT_EQ(ValidateBatch(testing::TestSignature(), ToInsertBatch(decoded).fields, ordered), 3);
}

TEST(ProtocolTest, InsertWithoutPrioritiesOrWithWrongPayloadCountIsHandled) {
  testing::TestBatch items(2);
  std::vector<Payload> payloads = EncodeInsert(items.Get());
  DecodedInsert decoded;
  DecodeInsert(payloads, decoded);
  EXPECT_TRUE(decoded.priorities.empty());
  payloads.pop_back();
  EXPECT_THROW(DecodeInsert(payloads, decoded), InvalidArgument);
  payloads.clear();
  EXPECT_THROW(DecodeInsert(payloads, decoded), InvalidArgument);
}

TEST(ProtocolTest, SampleRequestCarriesItsOptionalSeedAndRejectsABadOne) {
  const SampleRequest seeded =
      DecodeSampleRequest(EncodeSampleRequest({.batch_size = 8, .seed = 0xfedcba9876543210ULL}));
  EXPECT_EQ(seeded.batch_size, 8);
  EXPECT_EQ(seeded.seed, std::optional<std::uint64_t>(0xfedcba9876543210ULL));
  EXPECT_EQ(DecodeSampleRequest(EncodeSampleRequest({.batch_size = 8})).seed, std::nullopt);
  for (const char* bad : {R"({"batch_size": 8, "seed": -1})", R"({"batch_size": 8, "seed": 1.5})",
                          R"({"batch_size": 8, "seed": "7"})"}) {
    std::vector<Payload> payloads;
    payloads.push_back(Payload::FromString(bad));
    EXPECT_THROW(DecodeSampleRequest(payloads), InvalidArgument) << bad;
  }
}

TEST(ProtocolTest, SampleReplyRoundTripsWithoutCopyingFields) {
  Table table(testing::TestOptions(16));
  testing::TestBatch items(4, 7);
  table.Insert(items.Get({}, 3));
  SampledBatch batch = table.Sample({5});
  const std::vector<std::uint64_t> local_keys = batch.keys;
  const std::byte* observation = batch.fields[0].data.get();
  const std::vector<Payload> payloads = EncodeSampleReply(2, {4, 5, 4, 4.0}, std::move(batch));
  EXPECT_EQ(payloads[10].bytes().data(), observation);  // adopted, not copied
  const ShardSample decoded = DecodeSampleReply(payloads);
  EXPECT_EQ(decoded.shard, 2);
  EXPECT_EQ(decoded.totals.size, 4);
  ASSERT_EQ(decoded.batch.size(), 5);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(decoded.batch.keys[i], GlobalKey(2, local_keys[i]));
    EXPECT_EQ(decoded.batch.policy_versions[i], 3);
  }
  EXPECT_EQ(decoded.batch.fields[0].data.get(), observation);
  std::vector<Payload> truncated(payloads.begin(), payloads.begin() + 11);
  EXPECT_THROW(DecodeSampleReply(truncated), InvalidArgument);
}

TEST(ProtocolTest, ReconfigRoundTripsAndRejectsUnknownKeys) {
  TableReconfig change;
  change.rate_limiter = RateLimiterOptions::MinSize(7);
  change.beta = 0.5;
  const TableReconfig back = DecodeReconfig(EncodeReconfig(change));
  EXPECT_EQ(back.rate_limiter->min_size_to_sample, 7);
  EXPECT_EQ(*back.beta, 0.5);
  EXPECT_FALSE(back.alpha.has_value());
  EXPECT_THROW(DecodeReconfig(R"({"capacity": 1})"), InvalidArgument);
  EXPECT_THROW(DecodeReconfig(R"({"alpha": "high"})"), InvalidArgument);
  EXPECT_THROW(DecodeReconfig("[1, 2]"), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::replay::protocol
