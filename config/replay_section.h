#pragma once

// The `replay` section of an experiment config: the sharded replay service
// (replay/service/), turned into the options of one shard, of a writer and
// of a sampler.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_service.h"
#include "replay/service/replay_writer.h"
#include "rpc/security.h"

namespace rlswarm::config {

struct ReplaySection {
  int num_shards = 1;
  std::string host = "127.0.0.1";
  std::int64_t base_port = 47000;
  std::vector<std::string> endpoints;
  std::int64_t capacity = 100000;
  std::string selector = "prioritized";
  double alpha = 0.6;
  double beta = 0.4;
  std::int64_t min_size_to_sample = 1000;
  std::optional<double> samples_per_insert;
  double error_buffer = 1000;
  bool global_ratio = false;
  std::int64_t max_times_sampled = 0;
  std::string checkpoint_dir;
  double checkpoint_interval_s = 60;
  std::int64_t keep_checkpoints = 2;
  int workers = 2;
  std::uint64_t seed = 1;
  std::string frame_sharing = "auto";

  template <class V>
  void Visit(V& v) {
    v.Field("num_shards", num_shards, "replay shards (processes)", Bounds{1, 256});
    v.Field("host", host, "host of every shard when `endpoints` is empty");
    v.Field("base_port", base_port, "shard i listens on tcp://host:(base_port + i)",
            Bounds{1, 65535});
    v.Field("endpoints", endpoints,
            "one endpoint per shard (e.g. tcp://10.0.0.2:47000); overrides host/base_port");
    v.Field("capacity", capacity, "items per shard (FIFO eviction when full)", Bounds{1, 1e10});
    v.Choice("selector", selector,
             "how samples are drawn: uniform, or in proportion to priority^alpha (PER)",
             {"uniform", "prioritized"});
    v.Field("alpha", alpha, "prioritized: priority exponent (PER; 0 = uniform)", Bounds{0, 100});
    v.Field(
        "beta", beta,
        "prioritized: importance-sampling exponent of the loss weights (PER; 1 = full correction)",
        Bounds{0, 1});
    v.Field("min_size_to_sample", min_size_to_sample, "items a shard holds before sampling",
            Bounds{1, 1e10});
    v.Field("samples_per_insert", samples_per_insert,
            "sampled items per inserted item the rate limiter keeps; null = not limited",
            Bounds{1e-9, 1e9});
    v.Field("error_buffer", error_buffer, "how far the ratio may drift, in items", Bounds{1, 1e12});
    v.Field("global_ratio", global_ratio,
            "enforce samples_per_insert over all shards together, not per shard");
    v.Field("max_times_sampled", max_times_sampled,
            "remove an item after this many samples; 0 = never", Bounds{0, 1e12});
    v.Field("checkpoint_dir", checkpoint_dir,
            "where shard i checkpoints (<dir>/shard-<i>); empty = no checkpoints");
    v.Field("checkpoint_interval_s", checkpoint_interval_s,
            "seconds between checkpoints; 0 = only on request and on exit", Bounds{0, 1e9});
    v.Field("keep_checkpoints", keep_checkpoints, "complete checkpoints kept per shard",
            Bounds{1, 1000});
    v.Field("workers", workers, "rpc worker threads per shard", Bounds{1, 256});
    v.Field("seed", seed, "sampling seed (shard i uses a seed derived from it)");
    v.Choice("frame_sharing", frame_sharing,
             "store observations as stacks of shared frames, each distinct frame once (Atari: "
             "~7 KB per transition instead of ~56 KB); auto = when observations are uint8 "
             "[stack, H, W...] with frames of 1 KiB or more; on = any [stack, frame...] "
             "observation",
             {"auto", "on", "off"});
  }

  // Throws ConfigError (naming `file`) for options that are invalid together.
  void Check(const std::string& file) const;
  // The endpoint of every shard.
  std::vector<std::string> ShardEndpoints() const;
  // The fields stored as shared frames for `signature` (frame_sharing).
  // Throws ConfigError if frame_sharing is on and observations are no
  // frame stacks.
  std::vector<std::string> FrameFields(const replay::Signature& signature) const;
  // Shard `shard`'s options for items of `signature`.
  replay::ReplayServiceOptions ToServiceOptions(int shard, const replay::Signature& signature,
                                                const rpc::SecurityOptions& server_security,
                                                const rpc::SecurityOptions& client_security) const;
  replay::ReplayWriterOptions ToWriterOptions(const replay::Signature& signature,
                                              const rpc::SecurityOptions& security) const;
  replay::ReplaySamplerOptions ToSamplerOptions(const rpc::SecurityOptions& security) const;
};

}  // namespace rlswarm::config
