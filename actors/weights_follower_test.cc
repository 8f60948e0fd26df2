// WeightsFollower against real broadcast publishers over tcp loopback: one
// publisher of whole-model blobs, or one per learner rank publishing parts.

#include "actors/weights_follower.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/q_networks.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"
#include "replay/test_util.h"

namespace rlswarm::actors {
namespace {

using namespace std::chrono_literals;

const models::ModelSpec kMlp = models::MakeMlpSpec(models::MlpOptions{});

models::NamedTensors Weights(std::uint64_t seed) {
  models::NamedTensors named = models::InitNamedParameters(kMlp, seed);
  for (auto& [name, t] : named) t = t.to(at::kFloat).contiguous();
  return named;
}

// Rank `rank` of `ranks`: a contiguous slice of every parameter's elements,
// named as learner/apex/weights_broadcaster.cc names them.
std::vector<Payload> Part(const models::NamedTensors& named, int rank, int ranks) {
  models::NamedTensors part;
  int index = 0;
  for (const auto& [name, t] : named) {
    const std::int64_t n = t.numel();
    const std::int64_t begin = n * rank / ranks;
    const std::int64_t end = n * (rank + 1) / ranks;
    if (begin < end) {
      part.emplace_back(models::WeightsPartName(name, index, t.sizes().vec(), begin),
                        t.reshape(-1).narrow(0, begin, end - begin).clone());
    }
    ++index;
  }
  return models::EncodeWeights(part, rank, ranks);
}

bool SameWeights(const std::vector<Payload>& blob, const models::NamedTensors& expected) {
  const models::WeightsPart decoded = models::DecodeWeights(blob);
  if (decoded.num_shards != 1 || decoded.tensors.size() != expected.size()) return false;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (decoded.tensors[i].first != expected[i].first ||
        !at::equal(decoded.tensors[i].second, expected[i].second)) {
      return false;
    }
  }
  return true;
}

// The follower delivers `version` (> after), equal to `expected`, in time.
void ExpectNext(WeightsFollower& follower, std::uint64_t after, std::uint64_t version,
                const models::NamedTensors& expected) {
  const auto blob = follower.WaitNewer(after, 10s);
  ASSERT_TRUE(blob) << "no version after " << after;
  EXPECT_EQ(blob->version, version);
  EXPECT_TRUE(SameWeights(blob->payloads, expected));
}

rpc::SubscriberOptions Follow(const rpc::Publisher& publisher) {
  rpc::SubscriberOptions o;
  o.endpoint = publisher.endpoint();
  o.snapshot_endpoint = publisher.snapshot_endpoint();
  return o;
}

TEST(WeightsFollowerTest, WholeModelBlobsPassThrough) {
  rpc::Publisher publisher(rpc::PublisherOptions{});
  WeightsFollower follower({Follow(publisher)});
  EXPECT_FALSE(follower.Poll(0));
  const models::NamedTensors v1 = Weights(1);
  publisher.Publish(7, models::EncodeWeights(v1));
  const auto blob = follower.WaitNewer(0, 10s);
  ASSERT_TRUE(blob);
  EXPECT_EQ(blob->version, 7u);
  EXPECT_TRUE(SameWeights(blob->payloads, v1));
  EXPECT_FALSE(follower.Poll(7));  // nothing newer
  EXPECT_EQ(follower.newest_announced(), 7u);
}

TEST(WeightsFollowerTest, MergesTheSameVersionFromEveryRank) {
  rpc::Publisher rank0(rpc::PublisherOptions{});
  rpc::Publisher rank1(rpc::PublisherOptions{});
  rpc::Publisher rank2(rpc::PublisherOptions{});
  // Any order of publishers.
  WeightsFollower follower({Follow(rank2), Follow(rank0), Follow(rank1)});
  const models::NamedTensors v1 = Weights(1);
  for (int r = 0; r < 3; ++r) (r == 0 ? rank0 : r == 1 ? rank1 : rank2).Publish(1, Part(v1, r, 3));
  ExpectNext(follower, 0, 1, v1);
}

TEST(WeightsFollowerTest, NeverMixesVersionsAndTakesTheNewestOneEveryRankHas) {
  rpc::Publisher rank0(rpc::PublisherOptions{});
  rpc::Publisher rank1(rpc::PublisherOptions{});
  WeightsFollower follower({Follow(rank0), Follow(rank1)});
  const models::NamedTensors v1 = Weights(1);
  const models::NamedTensors v2 = Weights(2);
  const models::NamedTensors v3 = Weights(3);
  rank0.Publish(1, Part(v1, 0, 2));
  rank1.Publish(1, Part(v1, 1, 2));
  ASSERT_TRUE(follower.WaitNewer(0, 10s));
  // Rank 0 runs ahead by two versions: nothing complete beyond 1.
  rank0.Publish(2, Part(v2, 0, 2));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return follower.newest_announced() == 2; }, 10s));
  rank0.Publish(3, Part(v3, 0, 2));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return follower.newest_announced() == 3; }, 10s));
  EXPECT_FALSE(follower.WaitNewer(1, 200ms));
  // Rank 1 catches up to 2 only: version 2 comes from rank 0's history.
  rank1.Publish(2, Part(v2, 1, 2));
  ExpectNext(follower, 1, 2, v2);
  rank1.Publish(3, Part(v3, 1, 2));
  ExpectNext(follower, 2, 3, v3);
}

TEST(WeightsFollowerTest, PartsThatDoNotMatchThePublishersFollowedAreIgnored) {
  // A learner publishing 2 parts, but only rank 0's endpoints given.
  rpc::Publisher rank0(rpc::PublisherOptions{});
  WeightsFollower follower({Follow(rank0)});
  rank0.Publish(1, Part(Weights(1), 0, 2));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return follower.newest_announced() == 1; }, 10s));
  EXPECT_FALSE(follower.WaitNewer(0, 200ms));

  // Two publishers that both claim to be rank 0: the merge fails, nothing
  // is loaded, and a later good version still is.
  rpc::Publisher a(rpc::PublisherOptions{});
  rpc::Publisher b(rpc::PublisherOptions{});
  WeightsFollower both({Follow(a), Follow(b)});
  const models::NamedTensors v1 = Weights(1);
  a.Publish(1, Part(v1, 0, 2));
  b.Publish(1, Part(v1, 0, 2));
  ASSERT_TRUE(replay::testing::WaitFor([&] { return both.newest_announced() == 1; }, 10s));
  EXPECT_FALSE(both.WaitNewer(0, 200ms));
  const models::NamedTensors v2 = Weights(2);
  a.Publish(2, Part(v2, 0, 2));
  b.Publish(2, Part(v2, 1, 2));
  ExpectNext(both, 0, 2, v2);
}

TEST(WeightsFollowerTest, GarbageBlobsAreSkipped) {
  rpc::Publisher publisher(rpc::PublisherOptions{});
  WeightsFollower follower({Follow(publisher)});
  publisher.Publish(1, {Payload::FromString("not weights")});
  ASSERT_TRUE(replay::testing::WaitFor([&] { return follower.newest_announced() == 1; }, 10s));
  EXPECT_FALSE(follower.WaitNewer(0, 100ms));
  const models::NamedTensors v2 = Weights(2);
  publisher.Publish(2, models::EncodeWeights(v2));
  ExpectNext(follower, 0, 2, v2);
}

TEST(WeightsFollowerTest, NeedsAPublisher) { EXPECT_THROW(WeightsFollower({}), InvalidArgument); }

}  // namespace
}  // namespace rlswarm::actors
