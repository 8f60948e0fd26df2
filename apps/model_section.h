#pragma once

// The `model` section of an experiment config: the Q-network that actors,
// the learner and evaluation build for the config's env (models/).

#include <cstdint>
#include <string>
#include <vector>

#include "apps/config_reader.h"
#include "envs/spec.h"

namespace rlswarm::models {
struct ModelSpec;  // models/model_spec.h (LibTorch): only model_section.cc includes it
}  // namespace rlswarm::models

namespace rlswarm::apps {

struct ModelSection {
  std::vector<std::int64_t> hidden_sizes = {64, 64};  // MLP (vector observations)
  std::int64_t conv_filters = 16;                     // MinAtar network
  std::int64_t minatar_hidden = 128;
  bool dueling = false;
  std::uint64_t seed = 0;  // initial parameters

  template <class V>
  void Visit(V& v) {
    v.Field("hidden_sizes", hidden_sizes, "MLP hidden layer sizes (vector observations)",
            Bounds{1, 1 << 20});
    v.Field("conv_filters", conv_filters, "MinAtar net: 3x3 conv filters", Bounds{1, 4096});
    v.Field("minatar_hidden", minatar_hidden, "MinAtar net: fully connected units",
            Bounds{1, 65536});
    v.Field("dueling", dueling, "dueling head (Wang et al. 2016)");
    v.Field("seed", seed, "seed of the initial parameters");
  }

  // The MLP for 1-D observations; the MinAtar network (channels-last input,
  // as the envs produce it) for [10, 10, C] grids. Throws InvalidArgument for
  // continuous actions or other observation shapes (DQN needs discrete
  // actions).
  models::ModelSpec ToSpec(const envs::EnvSpec& env) const;
};

}  // namespace rlswarm::apps
