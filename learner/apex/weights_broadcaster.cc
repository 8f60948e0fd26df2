#include "learner/apex/weights_broadcaster.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/errors.h"
#include "models/weights_parts.h"
#include "models/weights_wire.h"

namespace rlswarm::learner {
namespace {

// The slices of this rank's flat local shard that parts mode publishes:
// every parameter it holds elements of, named as weights_parts.h says. In
// full mode on a direct model (one shard) the slices are the whole
// parameters under their own names.
// `prefix` goes before every name, `base` onto every offset.
void DescribeLocalSlices(const ShardedModel& model, bool as_parts, const std::string& prefix,
                         int64_t base, std::vector<std::string>* names,
                         std::vector<int64_t>* offsets, std::vector<int64_t>* numels,
                         std::vector<std::vector<int64_t>>* shapes) {
  const int shard = model.shard_index();
  int index = 0;
  for (const UnitLayout& u : model.layouts()) {
    const int64_t begin = static_cast<int64_t>(shard) * u.shard_numel;
    const int64_t end = begin + u.shard_numel;
    for (const ParamLayout& p : u.params) {
      const int64_t from = std::max(begin, p.offset);
      const int64_t to = std::min(end, p.offset + p.numel);
      if (from < to) {
        names->push_back(
            prefix +
            (as_parts ? models::WeightsPartName(p.name, index, p.shape, from - p.offset) : p.name));
        offsets->push_back(base + u.local_offset + from - begin);
        numels->push_back(to - from);
        shapes->push_back(as_parts ? std::vector<int64_t>{to - from} : p.shape);
      }
      ++index;
    }
  }
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

WeightsBroadcaster::WeightsBroadcaster(WeightsPublishingOptions options, ShardedModel& model)
    : WeightsBroadcaster(std::move(options), std::vector<PublishedModel>{{"", &model}}) {}

WeightsBroadcaster::WeightsBroadcaster(WeightsPublishingOptions options,
                                       std::vector<PublishedModel> models)
    : options_(std::move(options)), models_(std::move(models)) {
  if (models_.empty()) throw InvalidArgument("weights: nothing to publish");
  ShardedModel& model = *models_[0].model;
  const int rank = model.communicator().rank();
  bool publishes = rank == 0;
  rpc::PublisherOptions po = options_.publisher;
  if (options_.mode == PublishMode::kParts) {
    if (models_.size() != 1) {
      throw InvalidArgument("weights: publish_mode parts publishes one network, not " +
                            std::to_string(models_.size()) + " (use publish_mode full)");
    }
    num_parts_ = model.shard_count();
    publishes = !model.direct() ? rank < num_parts_ : rank == 0;
    po.endpoint = OffsetEndpointPort(po.endpoint, rank);
    po.snapshot_endpoint = OffsetEndpointPort(po.snapshot_endpoint, rank);
    po.name.append("-").append(std::to_string(rank));  // (+ trips GCC 12 -Wstringop-overflow)
  }
  if (publishes) {
    publisher_ = std::make_unique<rpc::Publisher>(po);
    sender_ = std::make_unique<WorkerThread>();
  }
}

// The sender sends what is waiting first.
WeightsBroadcaster::~WeightsBroadcaster() = default;

void WeightsBroadcaster::Publish(uint64_t version) {
  Job job;
  job.version = version;
  const bool parts = options_.mode == PublishMode::kParts;
  std::vector<at::Tensor> flat;
  int64_t offset = 0;
  for (const PublishedModel& published : models_) {
    ShardedModel& model = *published.model;
    if (!parts && !model.direct()) {
      models::NamedTensors full = model.FullParameters();  // collective
      if (!publisher_) continue;
      for (const auto& [name, t] : full) {
        job.names.push_back(published.prefix + name);
        job.offsets.push_back(offset);
        job.numels.push_back(t.numel());
        job.shapes.push_back(t.sizes().vec());
        offset += t.numel();
        flat.push_back(t.reshape(-1));
      }
    } else {
      if (!publisher_) continue;
      DescribeLocalSlices(model, parts, published.prefix, offset, &job.names, &job.offsets,
                          &job.numels, &job.shapes);
      // This rank's flat shard (on the CPU a copy: the next Step updates
      // the shard in place).
      const at::Tensor shard = model.LocalShard();
      offset += shard.numel();
      flat.push_back(shard.reshape(-1));
      if (parts) {
        job.shard = model.shard_index();
        job.num_shards = num_parts_;
      }
    }
  }
  if (!publisher_) return;
  // One device-to-host copy of everything published.
  job.flat = CopyToHostAsync(flat.size() == 1 ? flat[0] : at::cat(flat));
  // Replaces a version not yet sent: the newest wins.
  sender_->PostReplacingQueued([this, job = std::make_shared<Job>(std::move(job))] {
    try {
      Send(*job);
    } catch (const std::exception& e) {
      ++send_errors_;
      spdlog::warn("weights version {} not published: {}", job->version, e.what());
    }
  });
}

void WeightsBroadcaster::Flush() {
  if (sender_) sender_->Drain();
}

void WeightsBroadcaster::Send(Job& job) {
  job.flat.Wait();
  models::NamedTensors named;
  for (size_t i = 0; i < job.names.size(); ++i) {
    named.emplace_back(job.names[i],
                       job.flat.host.narrow(0, job.offsets[i], job.numels[i]).view(job.shapes[i]));
  }
  publisher_->Publish(job.version, models::EncodeWeights(named, job.shard, job.num_shards));
}

std::string WeightsBroadcaster::endpoint() const {
  return publisher_ ? publisher_->endpoint() : "";
}

std::string WeightsBroadcaster::snapshot_endpoint() const {
  return publisher_ ? publisher_->snapshot_endpoint() : "";
}

}  // namespace rlswarm::learner
