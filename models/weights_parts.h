#pragma once

// Per-rank parts of a model's weights: how a sharded learner publishes
// without any rank gathering the full model (each rank encodes its own flat
// shard, cut at parameter boundaries, with models::EncodeWeights(part, rank,
// world)), and how a subscriber puts one version back together.
//
// A part tensor is a 1-D run of one parameter's flattened elements, named
//   "<param name>#<param index>#<d0>x<d1>...#<element offset>"
// (the index orders parameters as models::ParameterNames does; the shape is
// the full parameter's; a scalar's shape is empty). Parameter names never
// contain '#'.
//
// Pure functions; thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/weights_wire.h"

namespace rlswarm::models {

// The part name of elements [offset, offset + n) of parameter `name`.
std::string WeightsPartName(const std::string& name, int index, const std::vector<int64_t>& shape,
                            int64_t offset);

// Reassembles the full named parameters (in parameter index order) from all
// parts of ONE version: shards 0..num_shards-1, each exactly once, in any
// order. Throws InvalidArgument when a shard is missing or repeated, the
// parts disagree on num_shards, a name is malformed, or a parameter is not
// covered exactly (gaps or overlaps).
NamedTensors MergeWeightParts(const std::vector<WeightsPart>& parts);

}  // namespace rlswarm::models
