#pragma once

// WeightsFollower: follows a learner's weights on the rpc broadcast channel
// however the learner publishes them (learner/apex/weights_broadcaster.h):
//   * publish_mode full:  one publisher, whole-model blobs (shard 0 of 1);
//   * publish_mode parts: one publisher per learner rank, each blob holding
//     that rank's slice of every parameter (shard r of S).
// Give it one SubscriberOptions per publisher, in any order. For parts it
// returns a version only once it holds that same version from every rank,
// merged into a whole-model blob, so an actor never loads a mix of two
// versions. Ranks publish a version at slightly different times, so each
// part's subscriber keeps its last few versions (keep_versions) and the
// follower takes the newest version all parts share.
// A rank that stops publishing leaves the follower at the last complete
// version (it never waits).
//
// Bad blobs (malformed, parts of a different count than the publishers
// followed, parts that do not fit together) are logged once per version
// and skipped; the follower keeps the version it had.
//
// Not thread-safe: one thread (the actor's loop, the evaluator) polls it.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rpc/broadcast.h"

namespace rlswarm::models {
struct WeightsPart;
}  // namespace rlswarm::models

namespace rlswarm::actors {

class WeightsFollower {
 public:
  // Throws InvalidArgument if `publishers` is empty or a subscriber cannot
  // be created (bad endpoint, bad keys).
  explicit WeightsFollower(std::vector<rpc::SubscriberOptions> publishers);
  ~WeightsFollower();
  WeightsFollower(const WeightsFollower&) = delete;
  WeightsFollower& operator=(const WeightsFollower&) = delete;

  // The newest complete version newer than `after`, as a whole-model blob
  // (models::DecodeWeights gives shard 0 of 1), or nullopt. Never blocks.
  std::optional<rpc::VersionedBlob> Poll(std::uint64_t after);
  // As Poll, waiting up to `timeout` for such a version.
  std::optional<rpc::VersionedBlob> WaitNewer(std::uint64_t after,
                                              std::chrono::milliseconds timeout);
  // The newest version any publisher has announced (0 before any): the
  // target a version lag is measured against.
  std::uint64_t newest_announced() const;
  int num_publishers() const { return static_cast<int>(parts_.size()); }

 private:
  struct Received;
  struct Part;

  void Receive(Part& part);
  std::optional<rpc::VersionedBlob> Assemble(std::uint64_t version);

  std::vector<std::unique_ptr<Part>> parts_;
  std::uint64_t rejected_version_ = 0;  // the newest version that failed to merge
};

}  // namespace rlswarm::actors
