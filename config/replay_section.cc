#include "config/replay_section.h"

#include "common/random.h"
#include "replay/service/transition.h"

namespace rlswarm::config {

void ReplaySection::Check(const std::string& file) const {
  const std::string where =
      (file.empty() ? std::string("<defaults>") : file) + ": section 'replay': ";
  if (!endpoints.empty() && static_cast<int>(endpoints.size()) != num_shards) {
    throw ConfigError(where + "endpoints lists " + std::to_string(endpoints.size()) +
                      " endpoints for num_shards = " + std::to_string(num_shards));
  }
  if (base_port + num_shards - 1 > 65535) {
    throw ConfigError(where + "base_port + num_shards - 1 exceeds 65535");
  }
  if (global_ratio && !samples_per_insert) {
    throw ConfigError(where + "global_ratio needs samples_per_insert");
  }
  if (min_size_to_sample > capacity) {
    throw ConfigError(where + "min_size_to_sample (" + std::to_string(min_size_to_sample) +
                      ") exceeds capacity (" + std::to_string(capacity) + ")");
  }
  try {
    replay::TableOptions table;
    table.signature.fields.push_back({"x", DType::kFloat32, {}});
    table.capacity = capacity;
    table.selector = {replay::ParseSelectorKind(selector), alpha, beta};
    table.rate_limiter = samples_per_insert
                             ? replay::RateLimiterOptions::SampleToInsertRatio(
                                   *samples_per_insert, min_size_to_sample, error_buffer)
                             : replay::RateLimiterOptions::MinSize(min_size_to_sample);
    table.Validate();
  } catch (const InvalidArgument& e) {
    throw ConfigError(where + e.what());
  }
}

std::vector<std::string> ReplaySection::FrameFields(const replay::Signature& signature) const {
  if (frame_sharing == "off") return {};
  const int index = signature.IndexOf(replay::transition::kObservation);
  if (index < 0 || signature.IndexOf(replay::transition::kNextObservation) < 0) return {};
  const replay::FieldSpec& observation = signature.fields[static_cast<std::size_t>(index)];
  const auto& shape = observation.shape;
  if (frame_sharing == "on") {
    if (shape.size() < 2) {
      throw ConfigError(
          "section 'replay': frame_sharing: on needs observations that are stacks "
          "of frames, [stack, frame...]; this env's are " +
          replay::ShapeToString(shape));
    }
  } else {
    constexpr std::size_t kMinFrameBytes = 1024;  // below, ids and index cost more than they save
    if (shape.size() < 3 || observation.dtype != DType::kUInt8 ||
        observation.ItemBytes() / static_cast<std::size_t>(shape[0]) < kMinFrameBytes) {
      return {};
    }
  }
  return {std::string(replay::transition::kObservation),
          std::string(replay::transition::kNextObservation)};
}

std::vector<std::string> ReplaySection::ShardEndpoints() const {
  if (!endpoints.empty()) return endpoints;
  std::vector<std::string> out;
  for (int i = 0; i < num_shards; ++i) {
    out.push_back("tcp://" + host + ":" + std::to_string(base_port + i));
  }
  return out;
}

replay::ReplayServiceOptions ReplaySection::ToServiceOptions(
    int shard, const replay::Signature& signature, const rpc::SecurityOptions& server_security,
    const rpc::SecurityOptions& client_security) const {
  replay::ReplayServiceOptions o;
  o.shard = shard;
  o.num_shards = num_shards;
  o.table.name = "replay-shard-" + std::to_string(shard);
  o.table.signature = signature;
  o.table.frame_fields = FrameFields(signature);
  o.table.capacity = capacity;
  o.table.selector = {replay::ParseSelectorKind(selector), alpha, beta};
  o.table.rate_limiter = samples_per_insert
                             ? replay::RateLimiterOptions::SampleToInsertRatio(
                                   *samples_per_insert, min_size_to_sample, error_buffer)
                             : replay::RateLimiterOptions::MinSize(min_size_to_sample);
  o.table.max_times_sampled = max_times_sampled;
  o.table.seed = DeriveSeed(seed, static_cast<std::uint64_t>(shard));
  const std::vector<std::string> all = ShardEndpoints();
  o.server.endpoint = all[static_cast<std::size_t>(shard)];
  o.server.num_workers = workers;
  o.server.name = "replay-" + std::to_string(shard);
  o.server.security = server_security;
  if (!checkpoint_dir.empty()) {
    o.checkpoints = replay::CheckpointerOptions{checkpoint_dir + "/shard-" + std::to_string(shard),
                                                keep_checkpoints};
    o.checkpoint_interval =
        std::chrono::milliseconds(static_cast<std::int64_t>(checkpoint_interval_s * 1000));
  }
  if (global_ratio) {
    for (int i = 0; i < num_shards; ++i) {
      if (i != shard) o.peers.push_back(all[static_cast<std::size_t>(i)]);
    }
  }
  o.peer_client.security = client_security;
  return o;
}

replay::ReplayWriterOptions ReplaySection::ToWriterOptions(
    const replay::Signature& signature, const rpc::SecurityOptions& security) const {
  replay::ReplayWriterOptions o;
  o.endpoints = ShardEndpoints();
  o.client.security = security;
  o.signature = signature;
  return o;
}

replay::ReplaySamplerOptions ReplaySection::ToSamplerOptions(
    const rpc::SecurityOptions& security) const {
  replay::ReplaySamplerOptions o;
  o.endpoints = ShardEndpoints();
  o.client.security = security;
  o.seed = seed;
  return o;
}

}  // namespace rlswarm::config
