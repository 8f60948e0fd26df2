#include "models/q_networks.h"

#include <ATen/ATen.h>

#include <string>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

LayerSpec DuelingHead(int64_t in, int64_t num_actions) {
  LayerSpec layer;
  layer.name = "head";
  layer.params = {{"value_weight", {1, in}, in, ParamInit::kFanInUniform},
                  {"value_bias", {1}, in, ParamInit::kFanInUniform},
                  {"advantage_weight", {num_actions, in}, in, ParamInit::kFanInUniform},
                  {"advantage_bias", {num_actions}, in, ParamInit::kFanInUniform}};
  layer.forward = [](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    at::Tensor value = at::linear(x, p[0], p[1]);
    at::Tensor advantage = at::linear(x, p[2], p[3]);
    // Subtracting the mean (not the max) keeps the decomposition identifiable
    // and the optimisation stable (Wang et al. 2016, eq. 9).
    return value + advantage - advantage.mean(/*dim=*/{1}, /*keepdim=*/true);
  };
  return layer;
}

}  // namespace

LayerSpec LinearLayer(std::string name, int64_t in, int64_t out, bool relu) {
  LayerSpec layer;
  layer.name = std::move(name);
  layer.params = {{"weight", {out, in}, in, ParamInit::kFanInUniform},
                  {"bias", {out}, in, ParamInit::kFanInUniform}};
  layer.forward = [relu](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    at::Tensor y = at::linear(x, p[0], p[1]);
    return relu ? at::relu(y) : y;
  };
  return layer;
}

LayerSpec HeadLayer(int64_t in, int64_t num_actions, bool dueling) {
  return dueling ? DuelingHead(in, num_actions) : LinearLayer("head", in, num_actions, false);
}

void MlpOptions::Validate() const {
  if (input_dim <= 0) throw InvalidArgument("mlp: input_dim must be > 0");
  if (num_actions <= 0) throw InvalidArgument("mlp: num_actions must be > 0");
  for (int64_t h : hidden_sizes) {
    if (h <= 0) throw InvalidArgument("mlp: hidden sizes must be > 0");
  }
}

void MinAtarOptions::Validate() const {
  if (in_channels <= 0 || num_actions <= 0 || conv_filters <= 0 || hidden <= 0) {
    throw InvalidArgument("minatar: channels, actions, filters and hidden must be > 0");
  }
  if (grid < 3) throw InvalidArgument("minatar: grid must be >= 3 for a 3x3 convolution");
}

ModelSpec MakeMlpSpec(const MlpOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "mlp";
  spec.sample_shape = {options.input_dim};
  spec.num_actions = options.num_actions;
  int64_t in = options.input_dim;
  for (size_t i = 0; i < options.hidden_sizes.size(); ++i) {
    spec.layers.push_back(LinearLayer("fc" + std::to_string(i), in, options.hidden_sizes[i], true));
    in = options.hidden_sizes[i];
  }
  spec.layers.push_back(HeadLayer(in, options.num_actions, options.dueling));
  spec.Validate();
  return spec;
}

ModelSpec MakeMinAtarSpec(const MinAtarOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "minatar";
  spec.sample_shape = options.channels_last_input
                          ? std::vector<int64_t>{options.grid, options.grid, options.in_channels}
                          : std::vector<int64_t>{options.in_channels, options.grid, options.grid};
  spec.num_actions = options.num_actions;

  const int64_t k = 3;
  const int64_t fan_in = options.in_channels * k * k;
  LayerSpec conv;
  conv.name = "conv";
  conv.params = {{"weight",
                  {options.conv_filters, options.in_channels, k, k},
                  fan_in,
                  ParamInit::kFanInUniform},
                 {"bias", {options.conv_filters}, fan_in, ParamInit::kFanInUniform}};
  const bool channels_last = options.channels_last_input;
  conv.forward = [channels_last](const at::Tensor& x, const std::vector<at::Tensor>& p) {
    const at::Tensor input = channels_last ? x.permute({0, 3, 1, 2}) : x;
    // No padding, as in the MinAtar reference: 10x10 -> 8x8.
    return at::relu(at::conv2d(input, p[0], p[1], /*stride=*/{1, 1})).flatten(1);
  };
  spec.layers.push_back(std::move(conv));

  const int64_t side = options.grid - k + 1;
  const int64_t flat = options.conv_filters * side * side;
  spec.layers.push_back(LinearLayer("fc", flat, options.hidden, true));
  spec.layers.push_back(HeadLayer(options.hidden, options.num_actions, options.dueling));
  spec.Validate();
  return spec;
}

void NatureCnnOptions::Validate() const {
  if (in_channels < 1 || num_actions < 1 || hidden < 1 || height < 36 || width < 36) {
    throw InvalidArgument(
        "nature_cnn: channels, actions and hidden must be >= 1, frames at least 36x36 (got " +
        std::to_string(height) + "x" + std::to_string(width) + ")");
  }
}

ModelSpec MakeNatureCnnSpec(const NatureCnnOptions& options) {
  options.Validate();
  ModelSpec spec;
  spec.name = "nature_cnn";
  spec.sample_shape = {options.in_channels, options.height, options.width};
  spec.num_actions = options.num_actions;
  struct Conv {
    int64_t out, kernel, stride;
  };
  const Conv convs[] = {{32, 8, 4}, {64, 4, 2}, {64, 3, 1}};
  int64_t channels = options.in_channels;
  int64_t h = options.height;
  int64_t w = options.width;
  for (int i = 0; i < 3; ++i) {
    const Conv c = convs[i];
    const int64_t fan_in = channels * c.kernel * c.kernel;
    LayerSpec layer;
    layer.name = "conv" + std::to_string(i);
    layer.params = {
        {"weight", {c.out, channels, c.kernel, c.kernel}, fan_in, ParamInit::kFanInUniform},
        {"bias", {c.out}, fan_in, ParamInit::kFanInUniform}};
    const bool first = i == 0;
    const bool last = i == 2;
    const int64_t stride = c.stride;
    layer.forward = [first, last, stride](const at::Tensor& x, const std::vector<at::Tensor>& p) {
      // Pixels arrive as 0..255 (cast to the network's dtype by the caller).
      const at::Tensor input = first ? x * (1.0 / 255.0) : x;
      at::Tensor out = at::relu(at::conv2d(input, p[0], p[1], {stride, stride}));
      return last ? out.flatten(1) : out;
    };
    spec.layers.push_back(std::move(layer));
    channels = c.out;
    h = (h - c.kernel) / c.stride + 1;
    w = (w - c.kernel) / c.stride + 1;
  }
  spec.layers.push_back(LinearLayer("fc", channels * h * w, options.hidden, true));
  spec.layers.push_back(HeadLayer(options.hidden, options.num_actions, options.dueling));
  spec.Validate();
  return spec;
}

}  // namespace rlswarm::models
