#pragma once

// Broadcast of versioned blobs (learner weights) to many subscribers: the
// zguide's Clone pattern.
//
//   Publisher: a PUB socket (binds) sends each version as ONE single-frame
//   message [u32 header length][header][payloads, 8-byte aligned]: a message
//   arrives whole or not at all, so a subscriber never sees a mix of two
//   versions. (Single frame on purpose: libzmq 4.3 can abort on a peer that
//   disconnects while a multipart PUB message is half queued, libzmq #3442.)
//   The blob is packed once per version and that one buffer is shared,
//   zero-copy, by every subscriber's queue. PUB never blocks: a subscriber
//   at its high-water mark (2 versions by default) misses versions and
//   cannot slow the publisher or the other subscribers.
//   Every `beacon_interval` the publisher also sends a tiny beacon with the
//   current version number, and it serves the current version on an rpc
//   Server ("snapshot").
//
//   Subscriber: on start it subscribes, then asks the snapshot endpoint for
//   the current version (a late joiner has it at once). It keeps only the
//   newest version it has received (versions only go up); when a beacon
//   names a newer version than it holds (it missed the newest at its
//   high-water mark, or joined while it was sent) it fetches a snapshot, so
//   a subscriber that falls behind converges to the newest version within
//   about a beacon interval plus one transfer.
//
// Thread-safety: both classes are thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/payload.h"
#include "rpc/security.h"

namespace rlswarm::rpc {

struct PublisherOptions {
  std::string endpoint = "tcp://127.0.0.1:*";           // PUB
  std::string snapshot_endpoint = "tcp://127.0.0.1:*";  // rpc Server
  int send_high_water_mark = 2;                         // versions queued per subscriber
  std::chrono::milliseconds beacon_interval{100};
  SecurityOptions security;
  std::string name = "broadcast";
};

struct VersionedBlob {
  std::uint64_t version = 0;
  std::vector<Payload> payloads;
};

class Publisher {
 public:
  // Binds both endpoints; throws Unavailable if either cannot be bound.
  explicit Publisher(PublisherOptions options);
  ~Publisher();

  // Publishes a new version; never blocks on subscribers. Throws
  // InvalidArgument unless version > the last published version.
  void Publish(std::uint64_t version, std::vector<Payload> payloads);

  std::string endpoint() const;
  std::string snapshot_endpoint() const;
  std::uint64_t version() const;  // 0 before the first Publish

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

struct SubscriberOptions {
  std::string endpoint;           // the publisher's PUB endpoint
  std::string snapshot_endpoint;  // the publisher's snapshot endpoint
  int receive_high_water_mark = 2;
  std::chrono::milliseconds snapshot_timeout{10000};
  std::int64_t max_message_bytes = 1LL << 34;
  SecurityOptions security;
  std::string name = "subscriber";
  // How many of the newest versions received Recent() returns (>= 1). A
  // follower of several publishers that must find the same version on each
  // keeps a few (actors::WeightsFollower); the blobs are shared handles.
  int keep_versions = 1;
};

class Subscriber {
 public:
  explicit Subscriber(SubscriberOptions options);
  ~Subscriber();  // joins the receive thread

  // The newest version received so far, or nullopt. Never blocks.
  std::optional<VersionedBlob> Latest() const;
  // Waits until a version newer than `after` is available, up to `timeout`;
  // nullopt on timeout.
  std::optional<VersionedBlob> WaitNewer(std::uint64_t after,
                                         std::chrono::milliseconds timeout) const;
  std::uint64_t version() const;  // 0 before any
  // Up to options.keep_versions of the newest versions received, oldest
  // first (a version is only missed when the publisher outpaces this
  // subscriber's receive thread, which then skips to the newest).
  std::vector<VersionedBlob> Recent() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlswarm::rpc
