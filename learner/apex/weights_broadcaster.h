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
// the gather. In kFull mode one blob may hold several networks (TD3's
// policy and critics), each under a name prefix; kParts publishes one.
//
// Training never waits for a broadcast: Publish() does the gather (kFull)
// and one device-to-host copy of the flat parameters on the training thread
// (asynchronous on CUDA, device_copies.h) and hands the host copy to the
// broadcaster's sender thread, which waits for the copy, encodes and
// publishes. One version waits at most; a newer one replaces it (the newest
// wins, subscribers skip versions anyway).
//
// Not thread-safe: the training thread drives it (its sender thread is
// internal and joined in the destructor, after the last version went out).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/worker_thread.h"
#include "learner/apex/device_copies.h"
#include "learner/fsdp/sharded_model.h"
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

// One network of the published blob; its parameters are named
// "<prefix><layer>.<param>".
struct PublishedModel {
  std::string prefix;
  ShardedModel* model = nullptr;
};

// "tcp://host:47100" -> "tcp://host:(47100 + offset)"; "...:*" unchanged.
// Throws InvalidArgument on an endpoint without a port.
std::string OffsetEndpointPort(const std::string& endpoint, int offset);

class WeightsBroadcaster {
 public:
  // Binds this rank's Publisher if it publishes (throws Unavailable if it
  // cannot bind). Local.
  WeightsBroadcaster(WeightsPublishingOptions options, ShardedModel& model);
  // Several networks in one blob (kFull only: throws InvalidArgument in
  // kParts mode with more than one).
  WeightsBroadcaster(WeightsPublishingOptions options, std::vector<PublishedModel> models);
  ~WeightsBroadcaster();

  // Publishes the current parameters as `version` (> the last one):
  // returns once the host copy is queued, before the blob is sent.
  // kFull: a collective (every rank must call it). kParts: local. Throws
  // what the gather throws; an error while sending is logged and counted
  // (send_errors()).
  void Publish(uint64_t version);
  // Blocks until every version handed to Publish was sent (or failed).
  void Flush();
  int64_t send_errors() const { return send_errors_.load(); }

  bool publishes() const { return publisher_ != nullptr; }
  // The bound endpoints; "" on a rank that does not publish.
  std::string endpoint() const;
  std::string snapshot_endpoint() const;
  int num_parts() const { return num_parts_; }

 private:
  WeightsPublishingOptions options_;
  std::vector<PublishedModel> models_;
  int num_parts_ = 1;
  std::unique_ptr<rpc::Publisher> publisher_;

  // A version on its way to the sender thread.
  struct Job {
    uint64_t version = 0;
    HostCopy flat;                   // the flat parameters (or this rank's shard)
    std::vector<std::string> names;  // per slice of `flat`
    std::vector<int64_t> offsets, numels;
    std::vector<std::vector<int64_t>> shapes;
    int shard = 0, num_shards = 1;
  };
  // On the sender thread.
  void Send(Job& job);

  std::atomic<int64_t> send_errors_{0};
  // Publishing ranks only; last: starts after, and drains before, the rest.
  std::unique_ptr<WorkerThread> sender_;
};

}  // namespace rlswarm::learner
