#pragma once

// Weights on the wire: how a learner publishes a model's parameters (rpc
// broadcast, rpc/broadcast.h) and how actors and evaluators read them back.
//
//   [JSON {"names": [n_0, ..., n_{k-1}], "shard": s, "num_shards": S}]
//   [tensor 0] ... [tensor k-1]       one frame each, dtype and shape kept
//
// A blob holds either the whole model (shard 0 of 1) or one rank's part of
// it (a learner option publishes per rank so that no rank gathers the full
// model; a subscriber merges the parts of one version with MergeWeightParts, weights_parts.h).
// Encoding keeps a contiguous CPU tensor alive as the frame's owner (no
// copy for CPU float32/float64 tensors); decoding wraps the received frames
// (no copy). bfloat16/half tensors travel as float32.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "common/payload.h"
#include "models/model_spec.h"

namespace rlswarm::models {

struct WeightsPart {
  NamedTensors tensors;
  int shard = 0;
  int num_shards = 1;
};

std::vector<Payload> EncodeWeights(const NamedTensors& named, int shard = 0, int num_shards = 1);
// Throws InvalidArgument on a malformed blob (names and frames disagree,
// a dtype that is not floating point, bad shard numbers).
WeightsPart DecodeWeights(const std::vector<Payload>& payloads);

}  // namespace rlswarm::models
