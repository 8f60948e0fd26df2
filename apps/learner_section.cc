#include "apps/learner_section.h"

#include "learner/dqn_learner_options.h"
#include "learner/rendezvous.h"

namespace rlswarm::apps {

void LearnerSection::Check(const std::string& /*file*/) const {
  // Every learner key is valid alone; see CheckCheckpoints.
}

void LearnerSection::CheckCheckpoints(const std::string& file) const {
  if (checkpoint_interval > 0 && checkpoint_dir.empty()) {
    throw ConfigError((file.empty() ? std::string("<defaults>") : file) +
                      ": section 'learner': checkpoint_interval needs checkpoint_dir");
  }
}

learner::DqnLearnerOptions LearnerSection::ToLearnerOptions(
    const replay::ReplaySamplerOptions& sampler,
    const rpc::SecurityOptions& server_security) const {
  learner::DqnLearnerOptions o;
  o.batch_size = batch_size;
  o.model.optimizer.kind = learner::ParseOptimizerKind(optimizer);
  o.model.optimizer.lr = lr;
  o.model.optimizer.max_grad_norm = max_grad_norm;
  o.model.sharding.strategy = learner::ParseShardingStrategy(strategy);
  o.model.sharding.layers_per_unit.assign(layers_per_unit.begin(), layers_per_unit.end());
  o.model.sharding.reduce_scatter = learner::ParseReduceScatterImpl(reduce_scatter);
  o.model.sharding.mixed_precision = MixedPrecision();
  o.model.seed = seed;
  o.loss.huber_delta = huber_delta;
  o.loss.priority_epsilon = priority_epsilon;
  o.loss.double_q = double_q;
  o.target_tau = target_tau;
  o.target_update_interval = target_update_interval;
  o.publish_interval = publish_interval;
  o.publishing.mode = learner::ParsePublishMode(publish_mode);
  o.publishing.publisher.endpoint = weights_endpoint;
  o.publishing.publisher.snapshot_endpoint = weights_snapshot_endpoint;
  o.publishing.publisher.security = server_security;
  o.publishing.publisher.name = "weights";
  o.checkpoint_dir = checkpoint_dir;
  o.checkpoint_interval = checkpoint_interval;
  o.keep_checkpoints = static_cast<int>(keep_checkpoints);
  o.sampler = sampler;
  o.sampler.timeout = std::chrono::milliseconds(static_cast<int64_t>(sample_timeout_s * 1000));
  o.prefetch = prefetch;
  o.log_interval = std::chrono::milliseconds(static_cast<int64_t>(log_interval_s * 1000));
  return o;
}

namespace {

at::ScalarType DTypeNamed(const std::string& name) {
  if (name == "float64") return at::kDouble;
  if (name == "bfloat16") return at::kBFloat16;
  return at::kFloat;
}

}  // namespace

learner::MixedPrecisionPolicy LearnerSection::MixedPrecision(bool can_sum_bfloat16) const {
  learner::MixedPrecisionPolicy p;
  p.master_dtype = DTypeNamed(dtype);
  p.param_dtype = param_dtype == "auto" ? p.master_dtype : DTypeNamed(param_dtype);
  if (reduce_dtype != "auto") {
    p.reduce_dtype = DTypeNamed(reduce_dtype);
  } else {
    p.reduce_dtype =
        p.param_dtype == at::kBFloat16 && !can_sum_bfloat16 ? at::kFloat : p.param_dtype;
  }
  return p;
}

learner::RendezvousOptions LearnerSection::ToRendezvousDefaults() const {
  learner::RendezvousOptions o;
  o.master_addr = master_addr;
  o.master_port = static_cast<uint16_t>(master_port);
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(rendezvous_timeout_s * 1000));
  return o;
}

}  // namespace rlswarm::apps
