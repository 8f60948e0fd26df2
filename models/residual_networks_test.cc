#include "models/residual_networks.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "models/q_network.h"

namespace rlswarm::models {
namespace {

using Params = std::map<std::string, at::Tensor>;

// Random values for every parameter (LayerNorm gains and biases included, so
// that they matter), loaded into a float64 QNetwork and returned by name.
Params Randomise(QNetwork& net, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  NamedTensors named = net.NamedParameters();
  Params by_name;
  for (auto& [name, t] : named) {
    t = at::empty(t.sizes(), at::kDouble).uniform_(-0.3, 0.3, gen);
    by_name[name] = t;
  }
  net.LoadParameters(named);
  return by_name;
}

// The reference ops, written out rather than calling the ATen kernels the
// networks use (linear, layer_norm, conv2d, max_pool2d).
at::Tensor RefLinear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::matmul(x, w.t()) + b;
}

at::Tensor RefLayerNorm(const at::Tensor& x, const at::Tensor& gain, const at::Tensor& bias) {
  const at::Tensor mean = x.mean({-1}, /*keepdim=*/true);
  const at::Tensor var = (x - mean).pow(2).mean({-1}, /*keepdim=*/true);  // biased, as torch
  return (x - mean) / at::sqrt(var + 1e-5) * gain + bias;
}

// 3x3 convolution, stride 1, zero padding 1, as im2col + matmul.
at::Tensor RefConv3x3(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const int64_t n = x.size(0), h = x.size(2), wd = x.size(3), out = w.size(0);
  const at::Tensor cols = at::im2col(x, {3, 3}, {1, 1}, {1, 1}, {1, 1});  // [N, C*9, H*W]
  const at::Tensor y = at::matmul(w.reshape({out, -1}), cols) + b.view({1, out, 1});
  return y.view({n, out, h, wd});
}

// Max over 3x3 windows, stride 2, padding 1 (padded with -inf).
at::Tensor RefMaxPool(const at::Tensor& x) {
  const at::Tensor padded =
      at::constant_pad_nd(x, {1, 1, 1, 1}, -std::numeric_limits<double>::infinity());
  return padded.unfold(2, 3, 2).unfold(3, 3, 2).amax({-1, -2});
}

at::Tensor RefHead(const at::Tensor& h, const Params& p, bool dueling) {
  if (!dueling) return RefLinear(h, p.at("head.weight"), p.at("head.bias"));
  const at::Tensor v = RefLinear(h, p.at("head.value_weight"), p.at("head.value_bias"));
  const at::Tensor a = RefLinear(h, p.at("head.advantage_weight"), p.at("head.advantage_bias"));
  return v + a - a.mean({1}, true);
}

at::Tensor RefResidualMlp(const at::Tensor& obs, const Params& p, int64_t blocks, bool dueling) {
  at::Tensor x = RefLinear(obs, p.at("embed.weight"), p.at("embed.bias"));
  for (int64_t b = 0; b < blocks; ++b) {
    const std::string n = "block" + std::to_string(b) + ".";
    at::Tensor h = RefLayerNorm(x, p.at(n + "norm_weight"), p.at(n + "norm_bias"));
    h = at::clamp_min(RefLinear(h, p.at(n + "fc1_weight"), p.at(n + "fc1_bias")), 0);
    x = x + RefLinear(h, p.at(n + "fc2_weight"), p.at(n + "fc2_bias"));
  }
  return RefHead(RefLayerNorm(x, p.at("norm.weight"), p.at("norm.bias")), p, dueling);
}

at::Tensor RefResidualConv(const at::Tensor& obs_channels_last, const Params& p,
                           const ResidualConvOptions& o) {
  at::Tensor x = obs_channels_last.permute({0, 3, 1, 2});
  for (int64_t s = 0; s < o.stages; ++s) {
    const std::string stage = "stage" + std::to_string(s);
    x = RefConv3x3(x, p.at(stage + "_conv.weight"), p.at(stage + "_conv.bias"));
    if (s > 0) x = RefMaxPool(x);
    for (int64_t k = 0; k < o.blocks_per_stage; ++k) {
      const std::string n = stage + "_block" + std::to_string(k) + ".";
      at::Tensor h =
          RefConv3x3(at::clamp_min(x, 0), p.at(n + "conv1_weight"), p.at(n + "conv1_bias"));
      h = RefConv3x3(at::clamp_min(h, 0), p.at(n + "conv2_weight"), p.at(n + "conv2_bias"));
      x = x + h;
    }
  }
  at::Tensor h = at::clamp_min(x, 0).reshape({x.size(0), -1});
  h = at::clamp_min(RefLinear(h, p.at("fc.weight"), p.at("fc.bias")), 0);
  return RefHead(h, p, o.dueling);
}

TEST(ResidualNetworksTest, MlpHasOneLayerPerBlockAndTheDocumentedParameterCount) {
  const ResidualMlpOptions o{.input_dim = 5, .width = 16, .blocks = 3, .num_actions = 4};
  ModelSpec spec = MakeResidualMlpSpec(o);
  std::vector<std::string> names;
  for (const LayerSpec& l : spec.layers) names.push_back(l.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"embed", "block0", "block1", "block2", "norm", "head"}));
  // embed 5x16+16, 3 x (LN 2x16 + 2 x (16x16+16)), norm 2x16, head 16x4+4.
  EXPECT_EQ(spec.Numel(), 96 + 3 * (32 + 2 * 272) + 32 + 68);
  EXPECT_EQ(ResidualMlpNumel(o), spec.Numel());
  for (bool dueling : {false, true}) {
    for (int64_t width : {1, 7, 64}) {
      const ResidualMlpOptions p{.width = width, .blocks = 2, .dueling = dueling};
      EXPECT_EQ(ResidualMlpNumel(p), MakeResidualMlpSpec(p).Numel()) << width << dueling;
    }
  }
  QNetwork net(spec, 1);
  EXPECT_EQ(net.Forward(at::rand({3, 5})).sizes(), (at::IntArrayRef{3, 4}));
}

TEST(ResidualNetworksTest, ConvTakesChannelsLastGridsAndHasTheDocumentedParameterCount) {
  for (int64_t stages : {1, 2, 3, 4}) {
    for (bool dueling : {false, true}) {
      const ResidualConvOptions o{.in_channels = 3,
                                  .num_actions = 5,
                                  .channels = 6,
                                  .stages = stages,
                                  .blocks_per_stage = 2,
                                  .hidden = 11,
                                  .dueling = dueling,
                                  .channels_last_input = true};
      ModelSpec spec = MakeResidualConvSpec(o);
      EXPECT_EQ(spec.layers.size(), static_cast<size_t>(stages * 3 + 2));
      EXPECT_EQ(ResidualConvNumel(o), spec.Numel()) << stages;
      QNetwork net(spec, 2);
      EXPECT_EQ(net.Forward(at::rand({2, 10, 10, 3})).sizes(), (at::IntArrayRef{2, 5}));
    }
  }
  // 10x10 keeps 10, then 5, 3, 2 pixels a side.
  EXPECT_EQ(ResidualConvOutputSide({.stages = 1}), 10);
  EXPECT_EQ(ResidualConvOutputSide({.stages = 3}), 3);
  EXPECT_EQ(ResidualConvOutputSide({.stages = 4}), 2);
  // By hand for 1 stage, 1 block, 4 channels in, C = 8, H = 16, 6 actions:
  // conv 9x4x8+8, block 2 x (9x8x8+8), fc 8x100x16+16, head 16x6+6.
  const ResidualConvOptions one{.channels = 8, .stages = 1, .blocks_per_stage = 1, .hidden = 16};
  EXPECT_EQ(MakeResidualConvSpec(one).Numel(), (288 + 8) + 2 * (576 + 8) + (12800 + 16) + (96 + 6));
}

TEST(ResidualNetworksTest, MlpForwardEqualsAHandWrittenReference) {
  for (bool dueling : {false, true}) {
    const ResidualMlpOptions o{
        .input_dim = 6, .width = 12, .blocks = 4, .num_actions = 3, .dueling = dueling};
    QNetwork net(MakeResidualMlpSpec(o), 3, at::kDouble);
    const Params p = Randomise(net, 11);
    const at::Tensor obs = at::rand({7, 6}, at::kDouble);
    const at::Tensor q = net.Forward(obs);
    EXPECT_LT((q - RefResidualMlp(obs, p, o.blocks, dueling)).abs().max().item<double>(), 1e-12);
  }
}

TEST(ResidualNetworksTest, ConvForwardEqualsAHandWrittenReference) {
  for (bool dueling : {false, true}) {
    const ResidualConvOptions o{.in_channels = 4,
                                .num_actions = 6,
                                .channels = 5,
                                .stages = 3,
                                .blocks_per_stage = 2,
                                .hidden = 9,
                                .dueling = dueling,
                                .channels_last_input = true};
    QNetwork net(MakeResidualConvSpec(o), 4, at::kDouble);
    const Params p = Randomise(net, 12);
    // Signed inputs, so that the pools' -inf padding and the ReLUs matter.
    const at::Tensor obs = at::rand({3, 10, 10, 4}, at::kDouble) * 2 - 1;
    const at::Tensor q = net.Forward(obs);
    EXPECT_LT((q - RefResidualConv(obs, p, o)).abs().max().item<double>(), 1e-12);
  }
}

// Q averaged over actions is the value stream (Wang et al. 2016, eq. 9).
TEST(ResidualNetworksTest, DuelingHeadsAverageToTheValue) {
  std::vector<ModelSpec> specs;
  specs.push_back(MakeResidualMlpSpec({.width = 8, .blocks = 2, .dueling = true}));
  specs.push_back(MakeResidualConvSpec(
      {.channels = 4, .stages = 2, .blocks_per_stage = 1, .hidden = 8, .dueling = true}));
  for (const ModelSpec& spec : specs) {
    QNetwork net(spec, 5, at::kDouble);
    std::vector<int64_t> shape = {4};
    shape.insert(shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
    const at::Tensor obs = at::rand(shape, at::kDouble);
    at::Tensor h = obs;
    for (size_t l = 0; l + 1 < spec.layers.size(); ++l) {
      h = spec.layers[l].forward(h, ParamViews(spec.layers[l], net.LayerFlats()[l]));
    }
    const std::vector<at::Tensor> head = ParamViews(spec.layers.back(), net.LayerFlats().back());
    const at::Tensor v = at::linear(h, head[0], head[1]);
    EXPECT_TRUE(at::allclose(net.Forward(obs).mean({1}, true), v)) << spec.name;
  }
}

TEST(ResidualNetworksTest, GradientsReachEveryBlock) {
  std::vector<ModelSpec> specs;
  specs.push_back(MakeResidualMlpSpec({.width = 8, .blocks = 6}));
  specs.push_back(MakeResidualConvSpec(
      {.channels = 4, .stages = 3, .blocks_per_stage = 2, .hidden = 8, .dueling = true}));
  for (const ModelSpec& spec : specs) {
    QNetwork net(spec, 6, at::kDouble);
    net.RequiresGrad(true);
    std::vector<int64_t> shape = {5};
    shape.insert(shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
    net.Forward(at::rand(shape, at::kDouble) * 2 - 1).pow(2).mean().backward();
    for (size_t l = 0; l < spec.layers.size(); ++l) {
      const at::Tensor& grad = net.LayerFlats()[l].grad();
      ASSERT_TRUE(grad.defined()) << spec.name << " " << spec.layers[l].name;
      // Every parameter of the layer, not just the layer as a whole.
      const std::vector<at::Tensor> per_param = ParamViews(spec.layers[l], grad);
      for (size_t i = 0; i < per_param.size(); ++i) {
        const double norm = per_param[i].norm().item<double>();
        EXPECT_TRUE(std::isfinite(norm) && norm > 0)
            << spec.name << " " << spec.layers[l].name << "." << spec.layers[l].params[i].name;
      }
    }
  }
}

// The sizes models/README.md documents as >= 100 M parameters. Only the
// specs are built (no parameter is allocated).
TEST(ResidualNetworksTest, DocumentedLargeConfigsHaveOver100MParameters) {
  const ResidualMlpOptions mlp{.input_dim = 4, .width = 1024, .blocks = 48, .num_actions = 2};
  const ModelSpec mlp_spec = MakeResidualMlpSpec(mlp);
  EXPECT_EQ(mlp_spec.Numel(), ResidualMlpNumel(mlp));
  EXPECT_EQ(mlp_spec.Numel(), 100'869'122);
  EXPECT_EQ(mlp_spec.layers.size(), 51u);

  const ResidualConvOptions conv{.in_channels = 4,
                                 .num_actions = 6,
                                 .channels = 512,
                                 .stages = 3,
                                 .blocks_per_stage = 7,
                                 .hidden = 512,
                                 .channels_last_input = true};
  const ModelSpec conv_spec = MakeResidualConvSpec(conv);
  EXPECT_EQ(conv_spec.Numel(), ResidualConvNumel(conv));
  EXPECT_EQ(conv_spec.Numel(), 106'213'382);
  EXPECT_EQ(conv_spec.layers.size(), 26u);
}

TEST(ResidualNetworksTest, OptionsRejectBadSizes) {
  EXPECT_THROW(MakeResidualMlpSpec({.width = 0}), InvalidArgument);
  EXPECT_THROW(MakeResidualMlpSpec({.blocks = 0}), InvalidArgument);
  EXPECT_THROW(MakeResidualConvSpec({.stages = 0}), InvalidArgument);
  EXPECT_THROW(MakeResidualConvSpec({.channels = -1}), InvalidArgument);
  EXPECT_THROW(ResidualConvNumel({.blocks_per_stage = 0}), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::models
