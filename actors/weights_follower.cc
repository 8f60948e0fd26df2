#include "actors/weights_follower.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/errors.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"

namespace rlswarm::actors {
namespace {

// Versions of each part kept while waiting for the other parts: ranks
// publish the same versions in lockstep, so a short history suffices.
constexpr int kVersionsPerPart = 4;

}  // namespace

struct WeightsFollower::Received {
  std::uint64_t version = 0;
  rpc::VersionedBlob blob;
  models::WeightsPart part;
};

struct WeightsFollower::Part {
  explicit Part(rpc::SubscriberOptions options)
      : subscriber(WithHistory(options)), name(options.name) {}
  // The subscriber keeps every version the follower may still need.
  static rpc::SubscriberOptions WithHistory(rpc::SubscriberOptions options) {
    options.keep_versions = std::max<int>(options.keep_versions, kVersionsPerPart);
    return options;
  }
  rpc::Subscriber subscriber;
  std::string name;
  std::uint64_t checked = 0;    // newest version looked at
  std::deque<Received> recent;  // oldest first
};

WeightsFollower::WeightsFollower(std::vector<rpc::SubscriberOptions> publishers) {
  if (publishers.empty()) throw InvalidArgument("weights follower: no publishers to follow");
  for (const rpc::SubscriberOptions& options : publishers) {
    parts_.push_back(std::make_unique<Part>(options));
  }
}

WeightsFollower::~WeightsFollower() = default;

std::uint64_t WeightsFollower::newest_announced() const {
  std::uint64_t newest = 0;
  for (const auto& part : parts_) newest = std::max(newest, part->subscriber.version());
  return newest;
}

void WeightsFollower::Receive(Part& part) {
  if (part.subscriber.version() <= part.checked) return;
  for (rpc::VersionedBlob& blob : part.subscriber.Recent()) {
    if (blob.version <= part.checked) continue;
    part.checked = blob.version;
    Received received;
    received.version = blob.version;
    try {
      received.part = models::DecodeWeights(blob.payloads);
    } catch (const Error& e) {
      spdlog::error("weights from {}: ignoring version {}: {}", part.name, blob.version, e.what());
      continue;
    }
    if (received.part.num_shards != num_publishers()) {
      spdlog::error(
          "weights from {}: version {} comes in {} part(s) but {} publisher(s) are followed "
          "(publish_mode parts needs every learner rank's endpoints, full needs one); ignored",
          part.name, blob.version, received.part.num_shards, num_publishers());
      continue;
    }
    received.blob = std::move(blob);
    part.recent.push_back(std::move(received));
    if (static_cast<int>(part.recent.size()) > kVersionsPerPart) part.recent.pop_front();
  }
}

std::optional<rpc::VersionedBlob> WeightsFollower::Poll(std::uint64_t after) {
  for (auto& part : parts_) Receive(*part);
  // The newest version every part holds.
  const auto& first = parts_.front()->recent;
  for (auto it = first.rbegin(); it != first.rend() && it->version > after; ++it) {
    const std::uint64_t version = it->version;
    const bool complete = std::all_of(parts_.begin(), parts_.end(), [&](const auto& part) {
      return std::any_of(part->recent.begin(), part->recent.end(),
                         [&](const Received& r) { return r.version == version; });
    });
    if (complete && version != rejected_version_) return Assemble(version);
  }
  return std::nullopt;
}

std::optional<rpc::VersionedBlob> WeightsFollower::Assemble(std::uint64_t version) {
  std::vector<models::WeightsPart> parts;
  const rpc::VersionedBlob* whole = nullptr;
  for (const auto& part : parts_) {
    for (const Received& r : part->recent) {
      if (r.version != version) continue;
      parts.push_back(r.part);
      whole = &r.blob;
    }
  }
  if (parts.size() == 1) return *whole;  // full mode: the blob as published
  try {
    return rpc::VersionedBlob{version, models::EncodeWeights(models::MergeWeightParts(parts))};
  } catch (const Error& e) {
    spdlog::error("weights: version {} from {} parts does not fit together: {}", version,
                  parts.size(), e.what());
    rejected_version_ = version;
    return std::nullopt;
  }
}

std::optional<rpc::VersionedBlob> WeightsFollower::WaitNewer(std::uint64_t after,
                                                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto blob = Poll(after)) return blob;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // No version newer than `after` is complete in every part: one becomes
    // complete only when the part furthest behind receives more. Its
    // subscriber wakes this at its next version (no re-polling).
    Part& behind =
        **std::min_element(parts_.begin(), parts_.end(),
                           [](const auto& a, const auto& b) { return a->checked < b->checked; });
    (void)behind.subscriber.WaitNewer(std::max(after, behind.checked),
                                      std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
  }
}

}  // namespace rlswarm::actors
