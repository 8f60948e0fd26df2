#pragma once

// The two Q-network families of rlswarm, as ModelSpecs (see model_spec.h):
//  - an MLP for vector observations (CartPole: 4-64-64-2);
//  - the MinAtar network of Young & Tian 2019: conv 16 filters 3x3 stride 1
//    -> ReLU -> FC 128 -> ReLU -> actions, on channel-first [B, C, 10, 10].
// Either can end in a dueling head (Wang et al. 2016, eq. 9):
// Q = V + A - mean_a(A).

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace rlswarm::models {

struct MlpOptions {
  int64_t input_dim = 4;
  std::vector<int64_t> hidden_sizes = {64, 64};
  int64_t num_actions = 2;
  bool dueling = false;

  // Throws InvalidArgument on a non-positive size.
  void Validate() const;
};

struct MinAtarOptions {
  int64_t in_channels = 4;  // differs per game: Breakout 4, Seaquest 10, ...
  int64_t num_actions = 6;
  int64_t conv_filters = 16;
  int64_t hidden = 128;
  int64_t grid = 10;  // MinAtar is always 10x10
  bool dueling = false;
  // Observations as the envs produce them, [B, 10, 10, C] (channels last):
  // the conv layer permutes them. false: [B, C, 10, 10].
  bool channels_last_input = false;

  void Validate() const;
};

// The Nature DQN network (Mnih et al. 2015) for Atari frame stacks
// [B, C, 84, 84] (uint8 pixels, scaled by 1/255 in the first layer): conv 32
// 8x8/4 -> conv 64 4x4/2 -> conv 64 3x3/1 -> FC 512 -> actions, ReLUs between.
struct NatureCnnOptions {
  int64_t in_channels = 4;  // frames in the stack
  int64_t height = 84;
  int64_t width = 84;
  int64_t num_actions = 6;
  int64_t hidden = 512;
  bool dueling = false;

  void Validate() const;
};

// The layers both families (and residual_networks.h) are built from.
// `name`: linear (+ ReLU); params "weight" [out, in], "bias" [out].
LayerSpec LinearLayer(std::string name, int64_t in, int64_t out, bool relu);
// "head": linear in -> num_actions, or the dueling head (params
// "value_weight/bias", "advantage_weight/bias").
LayerSpec HeadLayer(int64_t in, int64_t num_actions, bool dueling);

// Layers "fc0", "fc1", ... (linear + ReLU), then "head" (linear, or dueling).
ModelSpec MakeMlpSpec(const MlpOptions& options);

// Layers "conv" (conv + ReLU + flatten), "fc" (linear + ReLU), "head".
ModelSpec MakeMinAtarSpec(const MinAtarOptions& options);

// Layers "conv0", "conv1", "conv2" (conv + ReLU; the last flattens), "fc",
// "head".
ModelSpec MakeNatureCnnSpec(const NatureCnnOptions& options);

}  // namespace rlswarm::models
