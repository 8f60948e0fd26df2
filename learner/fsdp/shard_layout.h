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

// Size-based wrapping (torch FSDP's size_based_auto_wrap_policy, on a flat
// list of layers): walks the layers in order and closes a unit as soon as it
// holds >= min_params parameters; a tail that stays under min_params joins
// the unit before it. Returns layers per unit (for MakeUnitLayouts).
//
// The root: FSDP2's fully_shard(model) puts every parameter no child unit
// took (embedding, final norm, head: both ends) into one root group,
// gathered before the forward starts and kept until the backward. A unit
// here is a contiguous run of layers (one flat buffer, gathered when its
// first layer runs), so the two ends cannot share one without holding the
// head's parameters through the whole forward. Each end joins its
// neighbour instead: the embedding starts the first unit, and the head
// (with the final norm and whatever blocks are left) ends the last. So no
// unit but the whole model (when it is under min_params) is smaller than
// min_params: small ends never cost an all-gather and a reduce-scatter of
// their own, whose latency, not bytes, dominates at this size.
// min_params <= 0: one unit per layer.
std::vector<int> WrapBySize(const models::ModelSpec& spec, int64_t min_params);

// Sum of shard_numel over units: the length of a rank's flat buffer.
int64_t LocalNumel(const std::vector<UnitLayout>& units);

}  // namespace rlswarm::learner
