#pragma once

// Where each parameter lives once a model is cut into units and each unit's
// flat buffer is split over ranks. Pure arithmetic, the same on every rank;
// it is also what a sharded checkpoint's manifest records (global shapes and
// offsets).
//
// A unit's flat buffer holds its layers' parameters in ModelSpec order,
// zero-padded to padded_numel = shard_numel * shard_count so it splits evenly;
// rank r owns elements [r * shard_numel, (r + 1) * shard_numel).

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace rlswarm::learner {

struct ParamLayout {
  std::string name;  // "<layer>.<param>"
  std::vector<int64_t> shape;
  int64_t offset = 0;  // within the unit's flat buffer
  int64_t numel = 0;
};

struct UnitLayout {
  std::string name;  // layer names joined by '+'
  size_t first_layer = 0;
  size_t num_layers = 0;
  std::vector<int64_t> layer_offsets;  // start of each layer within the unit
  std::vector<ParamLayout> params;
  int64_t numel = 0;         // unpadded
  int64_t shard_numel = 0;   // ceil(numel / shard_count)
  int64_t padded_numel = 0;  // shard_numel * shard_count
  int64_t local_offset = 0;  // start of this unit's shard in a rank's flat buffer

  // How many of rank r's shard elements are real parameters (the rest is
  // padding, always zero).
  int64_t ValidNumel(int rank) const;
};

// layers_per_unit empty = one unit per layer. shard_count is the world size
// for sharded strategies and 1 for no_shard (every rank holds everything).
std::vector<UnitLayout> MakeUnitLayouts(const models::ModelSpec& spec,
                                        const std::vector<int>& layers_per_unit, int shard_count);

// Sum of shard_numel over units: the length of a rank's flat buffer.
int64_t LocalNumel(const std::vector<UnitLayout>& units);

}  // namespace rlswarm::learner
