#pragma once

// Publishing the learner's parameters to actors and evaluators on the rpc
// broadcast channel (rpc/broadcast.h), with version = the update count, in
// one of two ways:
//   kFull:  rank 0 gathers the full parameters (FullParameters(), a
//           collective every rank joins) and publishes them as one blob
//           (models::EncodeWeights(named), shard 0 of 1) on one Publisher.
//   kParts: every rank that holds a shard publishes only its own slice of
//           each parameter (models/weights_parts.h) as part `rank` of
//           `shard_count` on its own Publisher: no collective and no rank
//           ever holds the full model. Subscribers take the same version
//           from every rank's publisher and call models::MergeWeightParts.
// With no_shard (or world 1) there is one shard, so kParts is kFull without
// the gather.
//
// Not thread-safe: the training thread drives it.

#include <cstdint>
#include <memory>
#include <string>

#include "learner/sharded_model.h"
#include "rpc/broadcast.h"

namespace rlswarm::learner {

enum class PublishMode { kFull, kParts };
// "full", "parts"; throws InvalidArgument otherwise.
PublishMode ParsePublishMode(const std::string& name);

struct WeightsPublishingOptions {
  PublishMode mode = PublishMode::kFull;
  // In kParts mode an endpoint with a fixed port binds port + rank on rank
  // `rank` (a "*" port stays "*").
  rpc::PublisherOptions publisher;
};

// This rank's part of the parameters (see weights_parts.h): its slice of
// every parameter it holds elements of, copied. Local.
models::NamedTensors LocalWeightsPart(const ShardedModel& model);

// "tcp://host:47100" -> "tcp://host:(47100 + offset)"; "...:*" unchanged.
// Throws InvalidArgument on an endpoint without a port.
std::string OffsetEndpointPort(const std::string& endpoint, int offset);

class WeightsBroadcaster {
 public:
  // Binds this rank's Publisher if it publishes (throws Unavailable if it
  // cannot bind). Local.
  WeightsBroadcaster(WeightsPublishingOptions options, ShardedModel& model);
  ~WeightsBroadcaster();

  // Publishes the current parameters as `version` (> the last one).
  // kFull: a collective (every rank must call it). kParts: local.
  void Publish(uint64_t version);

  bool publishes() const { return publisher_ != nullptr; }
  // The bound endpoints; "" on a rank that does not publish.
  std::string endpoint() const;
  std::string snapshot_endpoint() const;
  int num_parts() const { return num_parts_; }

 private:
  WeightsPublishingOptions options_;
  ShardedModel& model_;
  int num_parts_ = 1;
  std::unique_ptr<rpc::Publisher> publisher_;
};

}  // namespace rlswarm::learner
