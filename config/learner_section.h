#pragma once

// The `learner` section of an experiment config: the Ape-X DQN learner
// (learner/algorithms/dqn_learner.h) of every rank, its sharding, the weights it
// publishes and its checkpoints. Defaults follow docs/baselines.md
// (CartPole: Adam lr 5e-3, global batch 128, Huber, clip 10, Polyak 0.01,
// double DQN).

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "config/config_reader.h"
#include "rpc/security.h"

// Declared only: experiment_config.h includes this header, and the apps that
// do not run a learner should not compile LibTorch's headers.
namespace rlswarm::learner {
struct ApeXOptions;
struct DqnOptions;
struct ShardedModelOptions;
struct Td3Options;
struct RendezvousOptions;
struct MixedPrecisionPolicy;
}  // namespace rlswarm::learner
namespace rlswarm::replay {
struct ReplaySamplerOptions;
}  // namespace rlswarm::replay

namespace rlswarm::config {

struct LearnerSection {
  std::string algorithm = "dqn";
  std::int64_t batch_size = 128;
  std::string optimizer = "adam";
  double lr = 5e-3;
  double optimizer_eps = 1e-8;
  double rmsprop_alpha = 0.99;
  bool rmsprop_centered = false;
  double max_grad_norm = 10;
  double target_tau = 0.01;
  std::int64_t target_update_interval = 100;
  bool double_q = true;
  double huber_delta = 1;
  double reward_clip = 0;
  double priority_epsilon = 1e-6;
  double policy_lr = 0;
  std::int64_t policy_delay = 2;
  double policy_noise = 0.2;
  double noise_clip = 0.5;
  std::string strategy = "full_shard";
  std::int64_t shard_group_size = 0;
  std::vector<std::int64_t> layers_per_unit;
  std::int64_t wrap_min_params = 0;
  std::string dtype = "float32";
  std::string param_dtype = "auto";
  std::string reduce_dtype = "auto";
  std::string reduce_scatter = "auto";
  std::string device = "auto";
  std::string backend = "auto";
  std::string nccl_debug = "off";
  std::uint64_t seed = 0;
  std::int64_t max_updates = 0;
  bool replay_prefetch = true;
  std::int64_t forward_prefetch = 2;
  std::int64_t backward_prefetch = 2;
  bool activation_checkpointing = false;
  // The value of the removed key `prefetch` when a config still sets it
  // (read only so that Check can name its replacements; never written).
  std::optional<std::string> removed_prefetch;
  double sample_timeout_s = 1;
  std::int64_t publish_interval = 10;
  std::string publish_mode = "full";
  std::string weights_endpoint = "tcp://127.0.0.1:*";
  std::string weights_snapshot_endpoint = "tcp://127.0.0.1:*";
  std::string checkpoint_dir;
  std::int64_t checkpoint_interval = 0;
  std::int64_t keep_checkpoints = 2;
  bool async_checkpoint = true;
  double log_interval_s = 10;
  std::int64_t stop_check_interval = 16;
  std::string master_addr = "127.0.0.1";
  std::int64_t master_port = 29500;
  std::string gloo_address;
  double rendezvous_timeout_s = 60;
  double watchdog_timeout_s = 30;

  // One line per key of the section, in the order configs and the generated
  // reference list them: long because the section is, and clearer as one
  // table than split across functions.
  template <class V>
  void Visit(V& v) {
    v.Choice("algorithm", algorithm,
             "dqn: Ape-X DQN (discrete actions); td3: TD3 with Ape-X's distributed replay "
             "(continuous actions)",
             {"dqn", "td3"});
    v.Field("batch_size", batch_size, "global batch; each of W ranks samples batch_size / W",
            Bounds{1, 1 << 20});
    v.Choice("optimizer", optimizer,
             "optimizer of every network the learner trains (td3: the policy and the critics)",
             {"adam", "rmsprop"});
    v.Field("lr", lr, "learning rate", Bounds{1e-12, 10});
    v.Field("optimizer_eps", optimizer_eps,
            "added to the denominator of adam's and rmsprop's step (MinAtar's DQN: rmsprop 0.01)",
            Bounds{0, 10});
    v.Field("rmsprop_alpha", rmsprop_alpha,
            "rmsprop: smoothing of the squared-gradient average (MinAtar's DQN: 0.95)",
            Bounds{0, 0.9999999});
    v.Field("rmsprop_centered", rmsprop_centered,
            "rmsprop: divide by the gradient's running standard deviation, not its root mean "
            "square (the DQN papers' and MinAtar's DQN: true)");
    v.Field("max_grad_norm", max_grad_norm, "clip the global gradient norm; 0 = off",
            Bounds{0, 1e12});
    v.Field("target_tau", target_tau,
            "Polyak averaging of the target net per update; 0 = hard copy every "
            "target_update_interval updates",
            Bounds{0, 1});
    v.Field("target_update_interval", target_update_interval,
            "updates between hard target copies (when target_tau is 0)", Bounds{1, 1e12});
    v.Field("double_q", double_q,
            "dqn: double Q-learning targets (van Hasselt et al. 2016; Ape-X)");
    v.Field("huber_delta", huber_delta, "dqn: Huber loss threshold", Bounds{1e-12, 1e12});
    v.Field("reward_clip", reward_clip,
            "train on env rewards clipped to [-reward_clip, reward_clip], each step before the "
            "n-step sum (DQN on Atari: 1); 0 = off; returns, metrics and evaluations stay "
            "unclipped",
            Bounds{0, 1e12});
    v.Field("priority_epsilon", priority_epsilon, "new priority = |TD error| + this",
            Bounds{0, 1e6});
    v.Field("policy_lr", policy_lr, "td3: the policy's learning rate; 0 = lr", Bounds{0, 10});
    v.Field("policy_delay", policy_delay,
            "td3: critic updates per policy update (and per target update)", Bounds{1, 1e6});
    v.Field("policy_noise", policy_noise,
            "td3: target policy smoothing noise, in units of the action's half-range",
            Bounds{0, 100});
    v.Field("noise_clip", noise_clip,
            "td3: the smoothing noise is clipped to +-this (in half-ranges)", Bounds{0, 100});
    v.Choice("strategy", strategy,
             "sharding strategy; hybrid_shard = full_shard within groups of shard_group_size "
             "consecutive ranks, replicated across the groups (FSDP's HYBRID_SHARD)",
             {"full_shard", "shard_grad_op", "no_shard", "hybrid_shard"});
    v.Field("shard_group_size", shard_group_size,
            "hybrid_shard: ranks per shard group (must divide the world size; = world size is "
            "full_shard, 1 is no_shard); 0 = LOCAL_WORLD_SIZE (torchrun: the ranks of one node), "
            "else the world size (rlswarm launch runs every rank on one host)",
            Bounds{0, 1 << 20});
    v.Field("layers_per_unit", layers_per_unit,
            "sharding units: consecutive layers per unit (e.g. [3]: the CartPole MLP as one "
            "unit, one all-gather per forward); empty = one unit per layer");
    v.Field("wrap_min_params", wrap_min_params,
            "sharding units by size (FSDP's size-based auto-wrap): consecutive layers per unit "
            "until it holds >= this many parameters; the embedding joins the first unit and a "
            "smaller tail (final norm, head) the last; 0 = off. Not with layers_per_unit",
            Bounds{0, 1e15});
    v.Choice("dtype", dtype,
             "master dtype: the sharded parameters, their gradients and the optimizer state",
             {"float32", "float64"});
    v.Choice("param_dtype", param_dtype,
             "dtype of the gathered parameters the forward and backward compute in (FSDP2's "
             "MixedPrecisionPolicy.param_dtype; bfloat16 on GPUs); auto = dtype",
             {"auto", "float32", "float64", "bfloat16"});
    v.Choice("reduce_dtype", reduce_dtype,
             "dtype of the gradients on the wire (reduce-scatter / all-reduce); auto = "
             "param_dtype, or float32 where the backend cannot sum bfloat16 (Gloo in LibTorch "
             "1.13)",
             {"auto", "float32", "float64", "bfloat16"});
    v.Choice("reduce_scatter", reduce_scatter,
             "how sharded gradients are reduce-scattered: native = the backend's own (NCCL; Gloo "
             "in LibTorch 2.x), alltoall or allreduce = the fallbacks LibTorch 1.13's Gloo needs; "
             "auto = native where the backend has it, else alltoall",
             {"auto", "native", "alltoall", "allreduce"});
    v.Choice("device", device,
             "where this rank computes: cuda = cuda:LOCAL_RANK (needs the CUDA build); auto = "
             "cuda when the build has CUDA and a GPU is visible, else cpu",
             {"auto", "cpu", "cuda"});
    v.Choice("backend", backend,
             "collectives of parameters and gradients: nccl (GPUs; a CPU Gloo group beside it "
             "carries the control plane) or gloo (CPU); auto = nccl on cuda, gloo on cpu. With "
             "nccl a process group is built even at one rank",
             {"auto", "gloo", "nccl"});
    v.Choice("nccl_debug", nccl_debug,
             "NCCL's own log (sets NCCL_DEBUG for this rank); off = leave the environment as it is",
             {"off", "warn", "info", "trace"});
    v.Field("seed", seed, "model init seed (replay sampling uses replay.seed and the rank)");
    v.Field("max_updates", max_updates, "stop after this many updates; 0 = until SIGTERM",
            Bounds{0, 1e15});
    v.Field("replay_prefetch", replay_prefetch,
            "sample the next replay batch while the current one trains");
    v.Field("forward_prefetch", forward_prefetch,
            "sharding units whose all-gathers are in flight ahead of the forward (FSDP2's "
            "num_to_forward_prefetch): more overlap, more gathered parameters held at once",
            Bounds{0, 1 << 20});
    v.Field("backward_prefetch", backward_prefetch,
            "sharding units whose all-gathers are in flight ahead of the backward (FSDP2's "
            "num_to_backward_prefetch)",
            Bounds{0, 1 << 20});
    v.Field("activation_checkpointing", activation_checkpointing,
            "activation checkpointing per sharding unit: a unit's forward keeps only its input "
            "and its backward recomputes the unit (re-gathering its parameters when sharded); "
            "one more forward per update for one unit's activations at a time");
    // `prefetch` meant the replay batch until it was renamed; reading it
    // (never writing it: --print-config must not show it) lets Check say
    // what replaced it instead of the generic unknown-key list.
    if constexpr (std::is_same_v<V, ConfigReader>) {
      v.Field("prefetch", removed_prefetch, "removed: replay_prefetch");
    }
    v.Field("sample_timeout_s", sample_timeout_s,
            "longest wait for one batch from replay (filling, or held by the rate limiter) "
            "before the learner checks for a stop and asks again",
            Bounds{0.001, 1e6});
    v.Field("publish_interval", publish_interval, "publish the weights every N updates; 0 = never",
            Bounds{0, 1e12});
    v.Choice("publish_mode", publish_mode,
             "full: rank 0 publishes the gathered model; parts: every rank its own shard",
             {"full", "parts"});
    v.Field("weights_endpoint", weights_endpoint,
            "PUB endpoint of the weights (tcp://host:* picks a port; parts: port + rank)");
    v.Field("weights_snapshot_endpoint", weights_snapshot_endpoint,
            "snapshot endpoint of the weights (late joiners; parts: port + rank)");
    v.Field("checkpoint_dir", checkpoint_dir,
            "sharded checkpoints (<dir>/update-N); resumed from at start; empty = none");
    v.Field("checkpoint_interval", checkpoint_interval,
            "updates between checkpoints; 0 = only on SIGTERM/SIGINT and at max_updates",
            Bounds{0, 1e12});
    v.Field("keep_checkpoints", keep_checkpoints, "complete checkpoints kept", Bounds{1, 1000});
    v.Field("async_checkpoint", async_checkpoint,
            "write the periodic checkpoints on a writer thread while training goes on (training "
            "pauses only to copy the shards to host memory); false = synchronous saves");
    v.Field("log_interval_s", log_interval_s, "seconds between metric logs; 0 = never",
            Bounds{0, 1e9});
    v.Field(
        "stop_check_interval", stop_check_interval,
        "updates between polls of the stop signals (the ranks agree on a stop in every update's "
        "readiness all-reduce)",
        Bounds{1, 1e9});
    v.Field("master_addr", master_addr, "rendezvous address (MASTER_ADDR overrides)");
    v.Field("master_port", master_port, "rendezvous port (MASTER_PORT overrides)",
            Bounds{0, 65535});
    v.Field("gloo_address", gloo_address,
            "local address (or hostname) Gloo's connections bind to; \"\" = the address this "
            "host uses to reach master_addr (loopback in a one-machine run)");
    v.Field("rendezvous_timeout_s", rendezvous_timeout_s,
            "bound on the rendezvous and on every collective", Bounds{0.001, 1e6});
    v.Field("watchdog_timeout_s", watchdog_timeout_s,
            "a peer rank whose heartbeat stops (SIGSTOP, a frozen host) or that hangs in a "
            "collective this rank finished, for this long, makes this rank exit with code 75 so "
            "the launcher restarts the group (learner/dist/watchdog.h); 0 = off (multi-rank only)",
            Bounds{0, 1e6});
  }

  // Throws ConfigError (naming `file`) for options that are invalid together.
  void Check(const std::string& file) const;
  // For `rlswarm learner`: checkpoint_interval needs checkpoint_dir (`rlswarm
  // launch` fills checkpoint_dir in with the run directory's).
  void CheckCheckpoints(const std::string& file) const;
  // The learner loop's options; `sampler` comes from the replay section.
  learner::ApeXOptions ToApeXOptions(const replay::ReplaySamplerOptions& sampler,
                                     const rpc::SecurityOptions& server_security) const;
  // What each algorithm adds. TD3's networks start from the loop's `model`
  // options: the policy from model.seed, the critics from model.seed + 1
  // (as actors' networks do), the policy at policy_lr when > 0.
  learner::DqnOptions ToDqnOptions() const;
  learner::Td3Options ToTd3Options(const learner::ShardedModelOptions& model) const;
  learner::RendezvousOptions ToRendezvousDefaults() const;
  // hybrid_shard's shard group size for this world (shard_group_size, else
  // the launcher's ranks per node `local_world_size` when > 0, else
  // world_size). Throws ConfigError (naming the key, `file` and where the
  // size came from) when it does not divide world_size.
  int ShardGroupSize(int world_size, int local_world_size, const std::string& file) const;
  // dtype, param_dtype, reduce_dtype as FSDP2's MixedPrecisionPolicy (the
  // master dtype is `dtype`). `can_sum_bfloat16`: whether the backend that
  // will carry the gradients sums bf16 (auto reduce_dtype falls back to
  // float32 where it cannot).
  learner::MixedPrecisionPolicy MixedPrecision(bool can_sum_bfloat16 = true) const;
};

}  // namespace rlswarm::config
