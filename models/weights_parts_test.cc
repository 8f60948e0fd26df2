#include "models/weights_parts.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

// Two "ranks" each own a run of a [2, 3] weight and rank 1 the scalar-shaped
// bias; parts travel through the wire format and arrive out of order.
TEST(WeightsPartsTest, PartsOfOneVersionMergeInParameterOrder) {
  const at::Tensor w = at::arange(6, at::kFloat).view({2, 3});
  const at::Tensor b = at::full({}, 7.0f);
  NamedTensors rank0 = {
      {WeightsPartName("fc.weight", 0, {2, 3}, 0), w.reshape(-1).narrow(0, 0, 4)}};
  NamedTensors rank1 = {{WeightsPartName("fc.weight", 0, {2, 3}, 4), w.reshape(-1).narrow(0, 4, 2)},
                        {WeightsPartName("fc.bias", 1, {}, 0), b.reshape(-1)}};
  std::vector<WeightsPart> parts = {DecodeWeights(EncodeWeights(rank1, 1, 2)),
                                    DecodeWeights(EncodeWeights(rank0, 0, 2))};
  const NamedTensors merged = MergeWeightParts(parts);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].first, "fc.weight");
  EXPECT_TRUE(at::equal(merged[0].second, w));
  EXPECT_EQ(merged[1].first, "fc.bias");
  EXPECT_TRUE(at::equal(merged[1].second, b));
}

TEST(WeightsPartsTest, MissingShardsAndGapsAreRejected) {
  const at::Tensor w = at::arange(6, at::kFloat);
  NamedTensors rank0 = {{WeightsPartName("w", 0, {6}, 0), w.narrow(0, 0, 4)}};
  EXPECT_THROW(MergeWeightParts({WeightsPart{rank0, 0, 2}}), InvalidArgument);
  EXPECT_THROW(MergeWeightParts({WeightsPart{rank0, 0, 1}}), InvalidArgument);  // a gap
  EXPECT_THROW(MergeWeightParts({WeightsPart{{{"w", w}}, 0, 1}}), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::models
