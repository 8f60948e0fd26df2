#include "models/residual_networks.h"

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "models/q_networks.h"

namespace rlswarm::models {
namespace {

// torch.nn.LayerNorm's default.
constexpr double kLayerNormEps = 1e-5;

ParamSpec Weight(std::string name, std::vector<int64_t> shape, int64_t fan_in) {
  return {std::move(name), std::move(shape), fan_in, ParamInit::kFanInUniform};
}

LayerSpec NormLayer(int64_t width) {
  LayerSpec layer;
  layer.name = "norm";
  layer.params = {{"weight", {width}, width, ParamInit::kOnes},
                  {"bias", {width}, width, ParamInit::kZeros}};
  layer.forward = [width](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    return at::layer_norm(x, {width}, p[0], p[1], kLayerNormEps);
  };
  return layer;
}

// x + W2 relu(W1 LN(x) + b1) + b2 (pre-norm: the identity path is untouched).
LayerSpec MlpBlock(std::string name, int64_t width) {
  LayerSpec layer;
  layer.name = std::move(name);
  layer.params = {{"norm_weight", {width}, width, ParamInit::kOnes},
                  {"norm_bias", {width}, width, ParamInit::kZeros},
                  Weight("fc1_weight", {width, width}, width),
                  Weight("fc1_bias", {width}, width),
                  Weight("fc2_weight", {width, width}, width),
                  Weight("fc2_bias", {width}, width)};
  layer.forward = [width](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    at::Tensor h = at::layer_norm(x, {width}, p[0], p[1], kLayerNormEps);
    h = at::relu(at::linear(h, p[2], p[3]));
    return x + at::linear(h, p[4], p[5]);
  };
  return layer;
}

// A stage's first conv (3x3, padding 1: the side is kept), then IMPALA's
// max-pool 3x3 stride 2 where `pool`. The first stage also takes the
// observation to channels-first.
LayerSpec StageConv(std::string name, int64_t in, int64_t out, bool pool, bool channels_last) {
  const int64_t fan_in = in * 9;
  LayerSpec layer;
  layer.name = std::move(name);
  layer.params = {Weight("weight", {out, in, 3, 3}, fan_in), Weight("bias", {out}, fan_in)};
  layer.forward = [pool, channels_last](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    const at::Tensor input = channels_last ? x.permute({0, 3, 1, 2}) : x;
    at::Tensor y = at::conv2d(input, p[0], p[1], /*stride=*/{1, 1}, /*padding=*/{1, 1});
    if (pool) y = at::max_pool2d(y, /*kernel_size=*/{3, 3}, /*stride=*/{2, 2}, /*padding=*/{1, 1});
    return y;
  };
  return layer;
}

// IMPALA's residual block: x + conv(relu(conv(relu(x)))), 3x3, padding 1.
LayerSpec ConvBlock(std::string name, int64_t channels) {
  const int64_t fan_in = channels * 9;
  LayerSpec layer;
  layer.name = std::move(name);
  layer.params = {Weight("conv1_weight", {channels, channels, 3, 3}, fan_in),
                  Weight("conv1_bias", {channels}, fan_in),
                  Weight("conv2_weight", {channels, channels, 3, 3}, fan_in),
                  Weight("conv2_bias", {channels}, fan_in)};
  layer.forward = [](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    at::Tensor h = at::conv2d(at::relu(x), p[0], p[1], {1, 1}, {1, 1});
    h = at::conv2d(at::relu(h), p[2], p[3], {1, 1}, {1, 1});
    return x + h;
  };
  return layer;
}

// relu -> flatten -> linear -> relu: the torso ends on the residual stream,
// which has not been through a ReLU yet.
LayerSpec ConvFc(int64_t in, int64_t hidden) {
  LayerSpec layer = LinearLayer("fc", in, hidden, /*relu=*/true);
  LayerForward linear = std::move(layer.forward);
  layer.forward = [linear](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    return linear(at::relu(x).flatten(1), p);
  };
  return layer;
}

int64_t HeadNumel(int64_t in, int64_t num_actions, bool dueling) {
  const int64_t outputs = dueling ? num_actions + 1 : num_actions;
  return (in + 1) * outputs;
}

}  // namespace

void ResidualMlpOptions::Validate() const {
  if (input_dim <= 0 || width <= 0 || blocks <= 0 || num_actions <= 0) {
    throw InvalidArgument("residual mlp: input_dim, width, blocks and num_actions must be > 0");
  }
}

void ResidualConvOptions::Validate() const {
  if (in_channels <= 0 || num_actions <= 0 || channels <= 0 || stages <= 0 ||
      blocks_per_stage <= 0 || hidden <= 0 || grid <= 0) {
    throw InvalidArgument(
        "residual conv: in_channels, num_actions, channels, stages, blocks_per_stage, hidden "
        "and grid must be > 0");
  }
}

ModelSpec MakeResidualMlpSpec(const ResidualMlpOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "residual_mlp";
  spec.sample_shape = {options.input_dim};
  spec.num_actions = options.num_actions;
  // No ReLU after the embedding: the first block normalises it, and the
  // residual stream stays signed (SimBa).
  spec.layers.push_back(LinearLayer("embed", options.input_dim, options.width, /*relu=*/false));
  for (int64_t b = 0; b < options.blocks; ++b) {
    spec.layers.push_back(MlpBlock("block" + std::to_string(b), options.width));
  }
  // The stream's scale grows with depth; the head sees it normalised.
  spec.layers.push_back(NormLayer(options.width));
  spec.layers.push_back(HeadLayer(options.width, options.num_actions, options.dueling));
  spec.Validate();
  return spec;
}

int64_t ResidualConvOutputSide(const ResidualConvOptions& options) {
  int64_t side = options.grid;
  // max-pool 3x3, stride 2, padding 1: floor((side - 1) / 2) + 1.
  for (int64_t s = 1; s < options.stages; ++s) side = (side + 1) / 2;
  return side;
}

ModelSpec MakeResidualConvSpec(const ResidualConvOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "residual_conv";
  spec.sample_shape = options.channels_last_input
                          ? std::vector<int64_t>{options.grid, options.grid, options.in_channels}
                          : std::vector<int64_t>{options.in_channels, options.grid, options.grid};
  spec.num_actions = options.num_actions;
  int64_t in = options.in_channels;
  for (int64_t s = 0; s < options.stages; ++s) {
    const std::string stage = "stage" + std::to_string(s);
    spec.layers.push_back(StageConv(stage + "_conv", in, options.channels, /*pool=*/s > 0,
                                    /*channels_last=*/s == 0 && options.channels_last_input));
    for (int64_t k = 0; k < options.blocks_per_stage; ++k) {
      spec.layers.push_back(ConvBlock(stage + "_block" + std::to_string(k), options.channels));
    }
    in = options.channels;
  }
  const int64_t side = ResidualConvOutputSide(options);
  spec.layers.push_back(ConvFc(options.channels * side * side, options.hidden));
  spec.layers.push_back(HeadLayer(options.hidden, options.num_actions, options.dueling));
  spec.Validate();
  return spec;
}

int64_t ResidualMlpNumel(const ResidualMlpOptions& options) {
  options.Validate();
  const int64_t w = options.width;
  return (options.input_dim + 1) * w + options.blocks * (2 * w * w + 4 * w) + 2 * w +
         HeadNumel(w, options.num_actions, options.dueling);
}

int64_t ResidualConvNumel(const ResidualConvOptions& options) {
  options.Validate();
  const int64_t c = options.channels;
  const int64_t side = ResidualConvOutputSide(options);
  const int64_t stage_convs =
      (9 * options.in_channels * c + c) + (options.stages - 1) * (9 * c * c + c);
  const int64_t blocks = options.stages * options.blocks_per_stage * 2 * (9 * c * c + c);
  const int64_t fc = c * side * side * options.hidden + options.hidden;
  return stage_convs + blocks + fc +
         HeadNumel(options.hidden, options.num_actions, options.dueling);
}

}  // namespace rlswarm::models
