// Size-based wrapping (ShardingOptions::wrap_min_params, WrapBySize): unit
// boundaries for a few specs and thresholds. Pure arithmetic on specs; the
// multi-rank training with such units is in sharded_training_test.cc.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.h"
#include "learner/fsdp/shard_layout.h"
#include "learner/fsdp/sharding_options.h"
#include "models/q_networks.h"
#include "models/residual_networks.h"

namespace rlswarm::learner {
namespace {

// Layers of 40 (embed), 4 x 160 (blocks), 16 (norm) and 18 (head)
// parameters.
models::ModelSpec SmallResidualMlp() {
  return models::MakeResidualMlpSpec({.input_dim = 4, .width = 8, .blocks = 4, .num_actions = 2});
}

std::vector<std::string> UnitNames(const models::ModelSpec& spec, const ShardingOptions& o) {
  std::vector<std::string> names;
  for (const UnitLayout& u : MakeUnitLayouts(spec, o.LayersPerUnit(spec), 2)) {
    names.push_back(u.name);
  }
  return names;
}

TEST(WrapBySizeTest, ClosesAUnitOnceItHoldsTheMinimumAndMergesTheTail) {
  const models::ModelSpec spec = SmallResidualMlp();
  std::vector<int64_t> numels;
  for (const models::LayerSpec& l : spec.layers) numels.push_back(l.Numel());
  ASSERT_EQ(numels, (std::vector<int64_t>{40, 160, 160, 160, 160, 16, 18}));

  using Sizes = std::vector<int>;
  EXPECT_EQ(WrapBySize(spec, 0), (Sizes{1, 1, 1, 1, 1, 1, 1}));  // off: one unit per layer
  EXPECT_EQ(WrapBySize(spec, 1), (Sizes{1, 1, 1, 1, 1, 1, 1}));
  // 40 + 160; each block alone; norm + head (34) join the last block.
  EXPECT_EQ(WrapBySize(spec, 100), (Sizes{2, 1, 1, 3}));
  EXPECT_EQ(WrapBySize(spec, 160), (Sizes{2, 1, 1, 3}));  // >= is enough: a block is 160
  // 200 exactly closes embed+block0; block1+block2 (320); the tail
  // block3+norm+head (194 < 200) joins it.
  EXPECT_EQ(WrapBySize(spec, 200), (Sizes{2, 5}));
  EXPECT_EQ(WrapBySize(spec, 300), (Sizes{3, 4}));
  EXPECT_EQ(WrapBySize(spec, 714), (Sizes{7}));  // the whole model, exactly
  EXPECT_EQ(WrapBySize(spec, 1'000'000), (Sizes{7}));
}

TEST(WrapBySizeTest, ShardingOptionsFormTheNamedUnits) {
  const models::ModelSpec spec = SmallResidualMlp();
  ShardingOptions o;
  o.wrap_min_params = 300;
  EXPECT_EQ(UnitNames(spec, o),
            (std::vector<std::string>{"embed+block0+block1", "block2+block3+norm+head"}));
  o.wrap_min_params = 0;
  EXPECT_EQ(UnitNames(spec, o).size(), spec.layers.size());
  o.layers_per_unit = {3, 4};
  EXPECT_EQ(UnitNames(spec, o).front(), "embed+block0+block1");

  // A conv net: a stage (conv 57 + block 168) per unit, the fc (196) alone,
  // the head (24) with it.
  const models::ModelSpec conv = models::MakeResidualConvSpec({.in_channels = 2,
                                                               .num_actions = 3,
                                                               .channels = 3,
                                                               .stages = 2,
                                                               .blocks_per_stage = 1,
                                                               .hidden = 7,
                                                               .grid = 5});
  ShardingOptions c;
  c.wrap_min_params = 150;
  EXPECT_EQ(UnitNames(conv, c), (std::vector<std::string>{"stage0_conv+stage0_block0",
                                                          "stage1_conv+stage1_block0", "fc+head"}));
  // The plain MinAtar net: conv (<1000) and fc (131,200) form one unit, the
  // head joins them.
  const models::ModelSpec minatar = models::MakeMinAtarSpec({.in_channels = 4, .num_actions = 6});
  ShardingOptions m;
  m.wrap_min_params = 100'000;
  EXPECT_EQ(UnitNames(minatar, m), (std::vector<std::string>{"conv+fc+head"}));
}

// The documented 100 M-parameter MLP (spec only, nothing allocated): with
// 8 M per unit, the embedding and four blocks, then ten units of four
// blocks, then four blocks with norm and head: many similar units.
TEST(WrapBySizeTest, HundredMillionParameterMlpFormsManySimilarUnits) {
  const models::ModelSpec spec =
      models::MakeResidualMlpSpec({.input_dim = 4, .width = 1024, .blocks = 48, .num_actions = 2});
  std::vector<int> expected = {5};
  expected.insert(expected.end(), 10, 4);
  expected.push_back(6);
  EXPECT_EQ(WrapBySize(spec, 8'000'000), expected);
  for (const UnitLayout& u : MakeUnitLayouts(spec, WrapBySize(spec, 8'000'000), 8)) {
    EXPECT_GE(u.numel, 8'000'000) << u.name;
    EXPECT_LT(u.numel, 8'000'000 + 2 * 2'101'248) << u.name;  // at most ~a block more
  }
}

TEST(WrapBySizeTest, OptionsRejectBothWrappingsAndNegativeSizes) {
  ShardingOptions o;
  o.wrap_min_params = -1;
  EXPECT_THROW(o.Validate(3), InvalidArgument);
  o.wrap_min_params = 10;
  EXPECT_NO_THROW(o.Validate(3));
  o.layers_per_unit = {3};
  EXPECT_THROW(o.Validate(3), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::learner
