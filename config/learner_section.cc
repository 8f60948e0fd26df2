#include "config/learner_section.h"

#include "common/random.h"
#include "learner/algorithms/dqn_algorithm.h"
#include "learner/algorithms/td3_trainer.h"
#include "learner/apex/apex_options.h"
#include "learner/dist/rendezvous.h"
#include "models/dtype_translation.h"

namespace rlswarm::config {

void LearnerSection::Check(const std::string& file) const {
  // See CheckCheckpoints for what only `rlswarm learner` needs.
  if (removed_prefetch) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.prefetch is now learner.replay_prefetch "
                      "(replay batches) — all-gather depth is "
                      "learner.forward_prefetch/backward_prefetch");
  }
  if (algorithm == "td3" && publish_mode != "full") {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.algorithm td3 publishes the policy and the "
                      "critics in one blob: learner.publish_mode must be full");
  }
  if (optimizer != "rmsprop" &&
      (rmsprop_centered || rmsprop_alpha != LearnerSection{}.rmsprop_alpha)) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.rmsprop_alpha and learner.rmsprop_centered "
                      "are for learner.optimizer: rmsprop (optimizer is " +
                      optimizer + ")");
  }
  if (shard_group_size > 0 && strategy != "hybrid_shard") {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.shard_group_size is only for "
                      "learner.strategy: hybrid_shard (strategy is " +
                      strategy + ")");
  }
  if (wrap_min_params > 0 && !layers_per_unit.empty()) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.wrap_min_params and learner.layers_per_unit "
                      "both choose the sharding units; set one of them");
  }
  // Heartbeats go every timeout / 6 (at most 1 s): below 0.1 s a busy host's
  // scheduling delays alone would raise the alarm.
  if (watchdog_timeout_s > 0 && watchdog_timeout_s < 0.1) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': learner.watchdog_timeout_s " +
                      std::to_string(watchdog_timeout_s) + " is too small: 0 (off) or >= 0.1");
  }
}

void LearnerSection::CheckCheckpoints(const std::string& file) const {
  if (checkpoint_interval > 0 && checkpoint_dir.empty()) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': checkpoint_interval needs checkpoint_dir");
  }
}

learner::ApeXOptions LearnerSection::ToApeXOptions(
    const replay::ReplaySamplerOptions& sampler,
    const rpc::SecurityOptions& server_security) const {
  learner::ApeXOptions o;
  o.batch_size = batch_size;
  o.model.optimizer.kind = learner::ParseOptimizerKind(optimizer);
  o.model.optimizer.lr = lr;
  o.model.optimizer.eps = optimizer_eps;
  o.model.optimizer.alpha = rmsprop_alpha;
  o.model.optimizer.centered = rmsprop_centered;
  o.model.optimizer.max_grad_norm = max_grad_norm;
  o.model.sharding.strategy = learner::ParseShardingStrategy(strategy);
  o.model.sharding.layers_per_unit.assign(layers_per_unit.begin(), layers_per_unit.end());
  o.model.sharding.wrap_min_params = wrap_min_params;
  o.model.sharding.num_to_forward_prefetch = static_cast<int>(forward_prefetch);
  o.model.sharding.num_to_backward_prefetch = static_cast<int>(backward_prefetch);
  o.model.sharding.activation_checkpointing = activation_checkpointing;
  o.model.sharding.reduce_scatter = learner::ParseReduceScatterImpl(reduce_scatter);
  o.model.sharding.mixed_precision = MixedPrecision();
  o.model.seed = seed;
  o.publish_interval = publish_interval;
  o.publishing.mode = learner::ParsePublishMode(publish_mode);
  o.publishing.publisher.endpoint = weights_endpoint;
  o.publishing.publisher.snapshot_endpoint = weights_snapshot_endpoint;
  o.publishing.publisher.security = server_security;
  o.publishing.publisher.name = "weights";
  o.checkpoint_dir = checkpoint_dir;
  o.checkpoint_interval = checkpoint_interval;
  o.keep_checkpoints = static_cast<int>(keep_checkpoints);
  o.async_checkpoint = async_checkpoint;
  o.sampler = sampler;
  o.sampler.timeout = std::chrono::milliseconds(static_cast<int64_t>(sample_timeout_s * 1000));
  o.replay_prefetch = replay_prefetch;
  o.log_interval = std::chrono::milliseconds(static_cast<int64_t>(log_interval_s * 1000));
  return o;
}

learner::DqnOptions LearnerSection::ToDqnOptions() const {
  learner::DqnOptions o;
  o.loss.huber_delta = huber_delta;
  o.loss.priority_epsilon = priority_epsilon;
  o.loss.double_q = double_q;
  o.target_tau = target_tau;
  o.target_update_interval = target_update_interval;
  return o;
}

learner::Td3Options LearnerSection::ToTd3Options(const learner::ShardedModelOptions& model) const {
  learner::Td3Options o;
  o.loss.policy_noise = policy_noise;
  o.loss.noise_clip = noise_clip;
  o.loss.priority_epsilon = priority_epsilon;
  o.policy_delay = policy_delay;
  o.target_tau = target_tau;
  o.critic = model;
  o.critic.seed = model.seed + 1;
  o.actor = model;
  if (policy_lr > 0) o.actor.optimizer.lr = policy_lr;
  // The same on every rank: each takes its rows of the global batch's noise.
  o.noise_seed = DeriveSeed(model.seed, 0x7d3);
  return o;
}

learner::MixedPrecisionPolicy LearnerSection::MixedPrecision(bool can_sum_bfloat16) const {
  learner::MixedPrecisionPolicy p;
  p.master_dtype = models::ParseFloatType(dtype);
  p.param_dtype = param_dtype == "auto" ? p.master_dtype : models::ParseFloatType(param_dtype);
  if (reduce_dtype != "auto") {
    p.reduce_dtype = models::ParseFloatType(reduce_dtype);
  } else {
    p.reduce_dtype =
        p.param_dtype == at::kBFloat16 && !can_sum_bfloat16 ? at::kFloat : p.param_dtype;
  }
  return p;
}

int LearnerSection::ShardGroupSize(int world_size, int local_world_size,
                                   const std::string& file) const {
  const int size = learner::ResolveShardGroupSize(static_cast<int>(shard_group_size),
                                                  local_world_size, world_size);
  try {
    learner::CheckShardGroupSize(world_size, size);
  } catch (const InvalidArgument& e) {
    const std::string from = shard_group_size > 0 ? "learner.shard_group_size"
                             : local_world_size > 0
                                 ? "learner.shard_group_size 0 = LOCAL_WORLD_SIZE"
                                 : "learner.shard_group_size 0 = the world size";
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': " + from + ": " + e.what());
  }
  return size;
}

learner::RendezvousOptions LearnerSection::ToRendezvousDefaults() const {
  learner::RendezvousOptions o;
  o.master_addr = master_addr;
  o.master_port = static_cast<uint16_t>(master_port);
  o.gloo_hostname = gloo_address;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(rendezvous_timeout_s * 1000));
  return o;
}

}  // namespace rlswarm::config
