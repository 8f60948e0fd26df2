#include "actors/continuous_policy.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "actors/q_policy.h"
#include "common/errors.h"
#include "models/continuous_networks.h"
#include "models/dtype_translation.h"
#include "models/model_spec.h"
#include "models/q_network.h"
#include "models/weights_wire.h"

namespace rlswarm::actors {

struct ContinuousPolicy::Impl {
  models::QNetwork policy;
  std::optional<models::QNetwork> critic;
  std::vector<int64_t> sample_shape;
  at::ScalarType observation_type;

  at::Tensor Observations(std::span<const std::byte> bytes, std::int64_t rows) const {
    std::vector<int64_t> shape = {rows};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    return at::from_blob(const_cast<std::byte*>(bytes.data()), shape,
                         at::TensorOptions().dtype(observation_type))
        .reshape({rows, -1})
        .to(at::kFloat);
  }
};

namespace {

void CopyOut(const at::Tensor& t, std::span<float> out) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  std::memcpy(out.data(), c.data_ptr<float>(), out.size_bytes());
}

// The tensors of `named` under `prefix`, without it, checked against the
// names and shapes of `network` (so that a bad blob changes nothing).
models::NamedTensors Select(const models::NamedTensors& named, const std::string& prefix,
                            const models::QNetwork& network) {
  std::map<std::string, at::Tensor> by_name;
  for (const auto& [name, t] : named) {
    if (name.rfind(prefix, 0) == 0) by_name.emplace(name.substr(prefix.size()), t);
  }
  models::NamedTensors selected;
  for (const auto& [name, current] : network.NamedParameters()) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw InvalidArgument("ContinuousPolicy: the weights have no " + prefix + name);
    }
    if (it->second.sizes() != current.sizes()) {
      throw InvalidArgument("ContinuousPolicy: " + prefix + name + " has the wrong shape");
    }
    selected.emplace_back(name, it->second);
  }
  return selected;
}

bool HasPrefix(const models::NamedTensors& named, const std::string& prefix) {
  for (const auto& entry : named) {
    if (entry.first.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

ContinuousPolicy::ContinuousPolicy(const models::ModelSpec& policy, const models::ModelSpec* critic,
                                   std::uint64_t seed, DType observation_dtype)
    : impl_(new Impl{models::QNetwork(policy, seed), std::nullopt, policy.sample_shape,
                     models::ToScalarType(observation_dtype)}),
      action_dim_(policy.num_actions) {
  if (critic) impl_->critic.emplace(*critic, seed + 1);
  std::int64_t elements = 1;
  for (auto d : policy.sample_shape) elements *= d;
  observation_bytes_ = static_cast<std::size_t>(elements) * DTypeSize(observation_dtype);
}

ContinuousPolicy::~ContinuousPolicy() = default;

bool ContinuousPolicy::has_critic() const { return impl_->critic.has_value(); }

void ContinuousPolicy::Actions(std::span<const std::byte> observations, std::int64_t rows,
                               std::span<float> actions_out) {
  if (observations.size() != static_cast<std::size_t>(rows) * observation_bytes_ ||
      actions_out.size() != static_cast<std::size_t>(rows * action_dim_)) {
    throw InvalidArgument("ContinuousPolicy::Actions: buffer sizes do not match " +
                          std::to_string(rows) + " rows");
  }
  ApplyInferenceThreads();
  c10::InferenceMode guard;
  CopyOut(impl_->policy.Forward(impl_->Observations(observations, rows)), actions_out);
}

void ContinuousPolicy::FirstCritic(std::span<const std::byte> observations,
                                   std::span<const float> actions, std::int64_t rows,
                                   std::span<float> q_out) {
  if (!impl_->critic) throw FailedPrecondition("ContinuousPolicy: no critics");
  if (observations.size() != static_cast<std::size_t>(rows) * observation_bytes_ ||
      actions.size() != static_cast<std::size_t>(rows * action_dim_) ||
      q_out.size() != static_cast<std::size_t>(rows)) {
    throw InvalidArgument("ContinuousPolicy::FirstCritic: buffer sizes do not match " +
                          std::to_string(rows) + " rows");
  }
  ApplyInferenceThreads();
  c10::InferenceMode guard;
  const at::Tensor a = at::from_blob(const_cast<float*>(actions.data()), {rows, action_dim_},
                                     at::TensorOptions().dtype(at::kFloat));
  const at::Tensor q =
      impl_->critic->Forward(at::cat({impl_->Observations(observations, rows), a}, 1));
  CopyOut(q.select(1, 0), q_out);
}

void ContinuousPolicy::LoadWeights(const std::vector<Payload>& blob) {
  const models::WeightsPart part = models::DecodeWeights(blob);
  if (part.num_shards != 1) {
    throw InvalidArgument("ContinuousPolicy: a weights blob of one shard of " +
                          std::to_string(part.num_shards) + " (merge the parts first)");
  }
  // A blob of the policy alone (a checkpoint's) carries its own names.
  const bool prefixed = HasPrefix(part.tensors, models::kPolicyWeightsPrefix);
  const models::NamedTensors policy =
      Select(part.tensors, prefixed ? models::kPolicyWeightsPrefix : "", impl_->policy);
  std::optional<models::NamedTensors> critic;
  if (prefixed && impl_->critic && HasPrefix(part.tensors, models::kCriticWeightsPrefix)) {
    critic = Select(part.tensors, models::kCriticWeightsPrefix, *impl_->critic);
  }
  c10::AutoGradMode no_grad(false);
  impl_->policy.LoadParameters(policy);
  if (critic) impl_->critic->LoadParameters(*critic);
}

}  // namespace rlswarm::actors
