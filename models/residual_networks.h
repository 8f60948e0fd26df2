#pragma once

// Residual Q-networks of configurable depth and width, as ModelSpecs (see
// model_spec.h), from a few thousand to hundreds of millions of parameters.
// Every residual block is its own LayerSpec, so the learner can form one
// sharding unit per block (or per few blocks: learner.wrap_min_params) and a
// deep model is many similar units, the case FSDP pays for.
//
//  - Residual MLP for vector observations, pre-LayerNorm blocks as in SimBa
//    (Lee et al. 2024, "SimBa: Simplicity Bias for Scaling Up Parameters in
//    Deep RL"): embed (linear) -> N x [x + W2 relu(W1 LN(x))] -> LN -> head.
//    LayerNorm rather than no norm: scaled-up value networks train stably
//    with it (SimBa; BRO, Nauman et al. 2024), and pre-norm keeps the
//    identity path free, so gradients reach every block (He et al. 2016,
//    "Identity Mappings in Deep Residual Networks"). Not BatchNorm: its
//    statistics would depend on each rank's share of the batch, so sharded
//    training at W ranks would no longer equal one process.
//  - Residual conv torso for MinAtar in the style of IMPALA (Espeholt et al.
//    2018): S stages of [conv 3x3 -> (max-pool 3x3 stride 2, from the second
//    stage on) -> K x (x + conv(relu(conv(relu(x)))))], then relu -> flatten
//    -> FC + ReLU -> head. No normalisation, as in IMPALA. The first stage
//    does not pool: MinAtar's grid is 10x10 (IMPALA's 84x84 can afford a
//    pool per stage), so stages keep 10, 5, 3, 2 pixels a side.
//
// Both end in the plain or the dueling head of q_networks.h.

#include <cstdint>

#include "models/model_spec.h"

namespace rlswarm::models {

struct ResidualMlpOptions {
  int64_t input_dim = 4;
  int64_t width = 256;  // the residual stream and each block's hidden layer
  int64_t blocks = 2;
  int64_t num_actions = 2;
  bool dueling = false;

  // Throws InvalidArgument on a non-positive size.
  void Validate() const;
};

struct ResidualConvOptions {
  int64_t in_channels = 4;
  int64_t num_actions = 6;
  int64_t channels = 32;  // of every stage
  int64_t stages = 2;
  int64_t blocks_per_stage = 2;
  int64_t hidden = 256;  // the fully connected layer after the torso
  int64_t grid = 10;
  bool dueling = false;
  // Observations [B, grid, grid, C] (channels last, as the envs produce
  // them); false: [B, C, grid, grid].
  bool channels_last_input = false;

  // Throws InvalidArgument on a non-positive size.
  void Validate() const;
};

// Layers "embed", "block0" ... "block<N-1>", "norm", "head". Parameters,
// with W = width, A = num_actions (see ResidualMlpNumel):
//   embed (in + 1) W; each block 2 W^2 + 4 W (LN gain and bias, two W x W
//   linears with biases); norm 2 W; head (W + 1) A, dueling (W + 1)(A + 1).
ModelSpec MakeResidualMlpSpec(const ResidualMlpOptions& options);

// Layers "stage<s>_conv", "stage<s>_block<k>" per stage, then "fc", "head".
// Parameters, with C = channels, H = hidden, side = the grid after the
// pools (side_0 = grid, side_s = ceil(side_{s-1} / 2) for s >= 1):
//   stage 0 conv 9 in C + C, later stage convs 9 C^2 + C; each block
//   2 (9 C^2 + C); fc C side^2 H + H; head as the MLP's with W = H.
ModelSpec MakeResidualConvSpec(const ResidualConvOptions& options);

// The formulas above, without building a spec; equal to the spec's Numel()
// (tested). For sizing a model from a config.
int64_t ResidualMlpNumel(const ResidualMlpOptions& options);
int64_t ResidualConvNumel(const ResidualConvOptions& options);

// The conv torso's output side length: grid, halved (rounding up) by each
// stage after the first.
int64_t ResidualConvOutputSide(const ResidualConvOptions& options);

}  // namespace rlswarm::models
