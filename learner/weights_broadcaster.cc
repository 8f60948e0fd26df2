#include "learner/weights_broadcaster.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/errors.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"

namespace rlswarm::learner {
namespace {

int ShardCount(const ShardedModel& model) {
  const auto& layouts = model.layouts();
  return layouts.empty() ? 1 : static_cast<int>(layouts[0].padded_numel / layouts[0].shard_numel);
}

int ShardIndex(const ShardedModel& model) {
  return model.direct() ? 0 : const_cast<ShardedModel&>(model).communicator().rank();
}

}  // namespace

PublishMode ParsePublishMode(const std::string& name) {
  if (name == "full") return PublishMode::kFull;
  if (name == "parts") return PublishMode::kParts;
  throw InvalidArgument("publish mode must be full or parts, not '" + name + "'");
}

std::string OffsetEndpointPort(const std::string& endpoint, int offset) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 >= endpoint.size()) {
    throw InvalidArgument("endpoint '" + endpoint + "' has no port");
  }
  const std::string port = endpoint.substr(colon + 1);
  if (port == "*") return endpoint;
  try {
    return endpoint.substr(0, colon + 1) + std::to_string(std::stoi(port) + offset);
  } catch (const std::exception&) {
    throw InvalidArgument("endpoint '" + endpoint + "' has no numeric port");
  }
}

models::NamedTensors LocalWeightsPart(const ShardedModel& model) {
  const int shard = ShardIndex(model);
  const at::Tensor local = model.LocalShard();
  models::NamedTensors part;
  int index = 0;
  for (const UnitLayout& u : model.layouts()) {
    const int64_t begin = static_cast<int64_t>(shard) * u.shard_numel;
    const int64_t end = begin + u.shard_numel;
    for (const ParamLayout& p : u.params) {
      const int64_t from = std::max(begin, p.offset);
      const int64_t to = std::min(end, p.offset + p.numel);
      if (from < to) {
        // A copy: the shard is updated in place by the next Step while the
        // publisher may still be packing this version.
        part.emplace_back(models::WeightsPartName(p.name, index, p.shape, from - p.offset),
                          local.narrow(0, u.local_offset + from - begin, to - from)
                              .to(at::kCPU, /*non_blocking=*/false, /*copy=*/true));
      }
      ++index;
    }
  }
  return part;
}

WeightsBroadcaster::WeightsBroadcaster(WeightsPublishingOptions options, ShardedModel& model)
    : options_(std::move(options)), model_(model) {
  const int rank = model.communicator().rank();
  bool publishes = rank == 0;
  rpc::PublisherOptions po = options_.publisher;
  if (options_.mode == PublishMode::kParts) {
    num_parts_ = ShardCount(model);
    publishes = !model.direct() ? rank < num_parts_ : rank == 0;
    po.endpoint = OffsetEndpointPort(po.endpoint, rank);
    po.snapshot_endpoint = OffsetEndpointPort(po.snapshot_endpoint, rank);
    po.name.append("-").append(std::to_string(rank));  // (+ trips GCC 12 -Wstringop-overflow)
  }
  if (publishes) publisher_ = std::make_unique<rpc::Publisher>(po);
}

WeightsBroadcaster::~WeightsBroadcaster() = default;

void WeightsBroadcaster::Publish(uint64_t version) {
  if (options_.mode == PublishMode::kFull) {
    models::NamedTensors full = model_.FullParameters();  // collective
    for (auto& [name, t] : full) t = t.cpu();             // no copy on CPU
    if (publisher_) publisher_->Publish(version, models::EncodeWeights(full));
    return;
  }
  if (!publisher_) return;
  publisher_->Publish(
      version, models::EncodeWeights(LocalWeightsPart(model_), ShardIndex(model_), num_parts_));
}

std::string WeightsBroadcaster::endpoint() const {
  return publisher_ ? publisher_->endpoint() : "";
}

std::string WeightsBroadcaster::snapshot_endpoint() const {
  return publisher_ ? publisher_->snapshot_endpoint() : "";
}

}  // namespace rlswarm::learner
