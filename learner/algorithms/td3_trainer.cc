#include "learner/algorithms/td3_trainer.h"

#include <ATen/ATen.h>

#include <string>
#include <utility>

#include "common/errors.h"
#include "common/random.h"

namespace rlswarm::learner {

void Td3Options::Validate() const {
  loss.Validate();
  if (policy_delay < 1) throw InvalidArgument("td3: policy_delay must be >= 1");
  if (!(target_tau > 0 && target_tau <= 1))
    throw InvalidArgument("td3: target_tau must be in (0, 1]");
  if (!actor.trainable || !critic.trainable) {
    throw InvalidArgument("td3: the actor and critic models must be trainable");
  }
}

Td3Trainer::Td3Trainer(models::ModelSpec actor_spec, models::ModelSpec critic_spec,
                       ActionBounds bounds, Td3Options options, ShardMesh mesh)
    : options_(std::move(options)), mesh_(std::move(mesh)) {
  options_.Validate();
  const int64_t observation_dim = actor_spec.sample_shape.empty() ? 0 : actor_spec.sample_shape[0];
  const int64_t action_dim = actor_spec.num_actions;
  if (actor_spec.sample_shape.size() != 1 || critic_spec.sample_shape.size() != 1 ||
      critic_spec.sample_shape[0] != observation_dim + action_dim || critic_spec.num_actions != 2) {
    throw InvalidArgument(
        "td3: the critic must take [observation, action] rows of the actor's widths and give "
        "[B, 2] (models::MakeTwinCriticSpec)");
  }
  if (bounds.low.numel() != action_dim || bounds.high.numel() != action_dim) {
    throw InvalidArgument("td3: action bounds need " + std::to_string(action_dim) + " values");
  }
  bounds_ = {bounds.low.to(at::kDouble).reshape(-1), bounds.high.to(at::kDouble).reshape(-1)};
  actor_ = std::make_unique<ShardedModel>(std::move(actor_spec), options_.actor, mesh_);
  critic_ = std::make_unique<ShardedModel>(std::move(critic_spec), options_.critic, mesh_);
  actor_target_ = actor_->MakeTarget();
  critic_target_ = critic_->MakeTarget();
}

Td3Trainer::~Td3Trainer() = default;

at::Tensor Td3Trainer::SmoothingNoise(int64_t rows, int64_t action_dim, int64_t update) const {
  // The global batch's noise, then this rank's rows (see the header).
  const int world = mesh_.world->world_size();
  const int rank = mesh_.world->rank();
  Rng rng(DeriveSeed(options_.noise_seed, static_cast<uint64_t>(update)));
  at::Tensor noise = at::empty({rows * world, action_dim}, at::kDouble);
  double* p = noise.data_ptr<double>();
  for (int64_t i = 0; i < noise.numel(); ++i) p[i] = rng.Normal();
  return noise.narrow(0, rows * rank, rows);
}

std::vector<double> Td3Trainer::TrainOn(const Td3Batch& batch, int64_t update) {
  const at::Device device = options_.critic.device;
  const at::ScalarType dtype = options_.critic.sharding.mixed_precision.param_dtype;
  auto input = [&](const at::Tensor& t) { return t.to(device, dtype); };
  const at::Tensor obs = input(batch.observation);
  const at::Tensor action = input(batch.action);
  const at::Tensor next_obs = input(batch.next_observation);
  const int64_t rows = obs.size(0);
  if (action.dim() != 2 || action.size(0) != rows || next_obs.size(0) != rows) {
    throw InvalidArgument("td3: observation, action and next observation need the same rows");
  }

  // Critics.
  at::Tensor next_q;
  {
    at::NoGradGuard no_grad;
    const at::Tensor next_action = SmoothTargetActions(
        actor_target_->Forward(next_obs), SmoothingNoise(rows, action.size(1), update).to(device),
        bounds_, options_.loss);
    next_q = critic_target_->Forward(at::cat({next_obs, next_action.to(dtype)}, 1));
  }
  critic_->ZeroGrad();
  const at::Tensor q = critic_->Forward(at::cat({obs, action}, 1));
  Td3Targets targets{batch.reward.to(device), batch.discount.to(device),
                     batch.weights.defined() ? batch.weights.to(device) : at::Tensor()};
  const Td3CriticLossResult critic_loss = Td3CriticLoss(q, next_q, targets, options_.loss);
  critic_loss.loss.backward();
  critic_->Step();

  // Policy and targets, every policy_delay updates.
  last_.policy_updated = update % options_.policy_delay == 0;
  if (last_.policy_updated) {
    actor_->ZeroGrad();
    critic_->ZeroGrad();  // the critic step's reductions land before the next backward
    const at::Tensor policy_q = critic_->Forward(at::cat({obs, actor_->Forward(obs)}, 1));
    const at::Tensor actor_loss = Td3ActorLoss(policy_q);
    actor_loss.backward();
    actor_->Step();
    critic_->ZeroGrad();  // the critics' gradient of the actor loss is not theirs to apply
    actor_target_->PolyakUpdate(*actor_, options_.target_tau);
    critic_target_->PolyakUpdate(*critic_, options_.target_tau);
    last_actor_loss_ = actor_loss.detach().to(at::kDouble).cpu().item<double>();
  }

  at::NoGradGuard no_grad;
  const at::Tensor summary = at::cat({critic_loss.priorities.reshape(-1),
                                      critic_loss.loss.detach().to(at::kDouble).reshape(1),
                                      critic_loss.td_error.abs().mean().to(at::kDouble).reshape(1)})
                                 .cpu();
  const double* p = summary.data_ptr<double>();
  const int64_t n = summary.numel() - 2;
  last_.critic_loss = p[n];
  last_.mean_abs_td = p[n + 1];
  last_.actor_loss = last_actor_loss_;
  return std::vector<double>(p, p + n);
}

}  // namespace rlswarm::learner
