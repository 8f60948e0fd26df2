#pragma once

// The `model` section of an experiment config: the Q-network that actors,
// the learner and evaluation build for the config's env (models/).

#include <cstdint>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "envs/spec.h"

namespace rlswarm::models {
struct ModelSpec;  // models/model_spec.h (LibTorch): only model_section.cc includes it
struct Td3Specs;   // models/continuous_networks.h
}  // namespace rlswarm::models

namespace rlswarm::config {

struct ModelSection {
  std::vector<std::int64_t> hidden_sizes = {64, 64};  // MLP (vector observations)
  std::int64_t conv_filters = 16;                     // MinAtar network
  std::int64_t minatar_hidden = 128;
  // torso: residual (models/residual_networks.h): a residual MLP for vector
  // observations, an IMPALA-style residual conv torso for MinAtar.
  std::string torso = "plain";
  std::int64_t width = 256;
  std::int64_t blocks = 2;
  std::int64_t channels = 32;
  std::int64_t stages = 2;
  std::int64_t blocks_per_stage = 2;
  bool dueling = false;
  std::uint64_t seed = 0;  // initial parameters

  template <class V>
  void Visit(V& v) {
    v.Field("hidden_sizes", hidden_sizes,
            "hidden layer sizes of the MLP (torso plain, vector observations) and of td3's policy "
            "and critics",
            Bounds{1, 1 << 20});
    v.Field("conv_filters", conv_filters,
            "MinAtar: 3x3 conv filters of the MinAtar net (torso plain)", Bounds{1, 4096});
    v.Field("minatar_hidden", minatar_hidden,
            "fully connected units of the MinAtar net (torso plain) and of nature_cnn",
            Bounds{1, 65536});
    v.Choice("torso", torso,
             "plain: the MLP (hidden_sizes) or the MinAtar net (conv_filters, minatar_hidden); "
             "residual: a residual MLP (width, blocks) or an IMPALA-style residual conv torso "
             "(channels, stages, blocks_per_stage, width), one layer per block; nature_cnn: the "
             "Nature DQN network for Atari frame stacks [C, H, W] (minatar_hidden units). dqn "
             "only: td3's networks are MLPs of hidden_sizes",
             {"plain", "residual", "nature_cnn"});
    v.Field("width", width,
            "residual torso: width of the MLP's residual stream (params ~ 2 blocks width^2), "
            "units of the conv torso's fully connected layer",
            Bounds{1, 65536});
    v.Field("blocks", blocks, "residual MLP: residual blocks (pre-LayerNorm, two linears each)",
            Bounds{1, 4096});
    v.Field("channels", channels,
            "residual conv torso: channels of every stage (params ~ 18 stages "
            "blocks_per_stage channels^2)",
            Bounds{1, 4096});
    v.Field("stages", stages,
            "residual conv torso: stages (conv, then a 3x3/2 max-pool from the second on: a "
            "10x10 grid keeps 10, 5, 3, 2 pixels a side)",
            Bounds{1, 8});
    v.Field("blocks_per_stage", blocks_per_stage,
            "residual conv torso: residual blocks per stage (two 3x3 convs each)", Bounds{1, 1024});
    v.Field("dueling", dueling,
            "dqn: a dueling head, separate value and advantage streams (Wang et al. 2016)");
    v.Field("seed", seed, "seed of the initial parameters");
  }

  // The MLP for 1-D observations; the MinAtar network (channels-last input,
  // as the envs produce it) for [10, 10, C] grids; their residual versions
  // with torso: residual. Throws InvalidArgument for continuous actions or
  // other observation shapes (DQN needs discrete actions).
  models::ModelSpec ToSpec(const envs::EnvSpec& env) const;
  // learner.algorithm td3: the deterministic policy (tanh into the env's
  // action bounds) and the twin critics, MLPs of hidden_sizes. Throws
  // InvalidArgument for discrete actions, non-vector observations or
  // unbounded actions.
  models::Td3Specs ToTd3Specs(const envs::EnvSpec& env) const;
};

}  // namespace rlswarm::config
