#include "models/weights_wire.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/q_network.h"
#include "models/q_networks.h"

namespace rlswarm::models {
namespace {

TEST(WeightsWireTest, ParametersRoundTripIntoAnotherNetwork) {
  const ModelSpec spec = MakeMlpSpec(MlpOptions{});
  QNetwork source(spec, /*seed=*/1);
  QNetwork target(spec, /*seed=*/2);
  const at::Tensor obs = at::randn({5, 4});
  ASSERT_FALSE(at::allclose(source.Forward(obs), target.Forward(obs)));
  const WeightsPart part = DecodeWeights(EncodeWeights(source.NamedParameters()));
  EXPECT_EQ(part.num_shards, 1);
  target.LoadParameters(part.tensors);
  EXPECT_TRUE(at::equal(source.Forward(obs), target.Forward(obs)));
}

TEST(WeightsWireTest, MalformedBlobsAreRejected) {
  std::vector<Payload> payloads = EncodeWeights({{"w", at::ones({2, 2})}}, 1, 2);
  EXPECT_EQ(DecodeWeights(payloads).shard, 1);
  payloads.pop_back();
  EXPECT_THROW(DecodeWeights(payloads), InvalidArgument);
  std::vector<Payload> garbage = {Payload::FromString("{")};
  EXPECT_THROW(DecodeWeights(garbage), InvalidArgument);
  std::vector<Payload> ints = {
      Payload::FromString(R"({"names": ["x"], "shard": 0, "num_shards": 1})"),
      Payload::FromVector(DType::kInt64, {1}, std::vector<std::int64_t>{1})};
  EXPECT_THROW(DecodeWeights(ints), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::models
