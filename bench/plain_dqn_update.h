#pragma once

// The plain reference for the learner's DQN update: one network and its
// target with a leaf tensor per parameter (initialised as the learner
// initialises them, models::InitParam; no flat buffers, no sharding, no
// process group), torch::optim::Adam, torch::nn::utils::clip_grad_norm_, and
// the double-Q n-step Huber loss written out in plain LibTorch. The bench's baselines use it twice:
// `learner_bench
// --dqn-update` times it against the learner's whole update, and
// `plain_dqn` trains a whole run with it.
//
// The settings it shares with the learner (network, optimizer, loss, target
// updates) come from the same config keys, so both do the same arithmetic.
//
// Not thread-safe: one thread updates.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/model_spec.h"

namespace rlswarm::config {
struct ExperimentConfig;
}  // namespace rlswarm::config

namespace rlswarm::bench {

struct PlainDqnOptions {
  double lr = 1e-3;
  double adam_eps = 1e-8;
  double max_grad_norm = 10;  // <= 0: no clipping
  double huber_delta = 1;
  bool double_q = true;
  double target_tau = 0.01;  // > 0: Polyak after every update; 0: hard copies
  int64_t target_update_interval = 100;
  uint64_t seed = 0;  // initial parameters (models::InitLayerFlat)
};

// The learner section's optimizer, loss and target settings and the model
// seed of `config`. Throws InvalidArgument unless learner.optimizer is adam
// (the plain update is torch::optim::Adam's).
PlainDqnOptions PlainDqnOptionsOf(const config::ExperimentConfig& config);

// One batch of n-step transitions as tensors: observations in the
// env's dtype ([B, ...]), actions int64 [B], rewards and discounts float32
// [B]; weights float64 [B] or undefined (uniform replay).
struct PlainDqnBatch {
  at::Tensor observation;
  at::Tensor action;
  at::Tensor reward;
  at::Tensor discount;
  at::Tensor next_observation;
  at::Tensor weights;
};

class PlainDqn {
 public:
  // Both networks on `device`; batches may be anywhere (moved there).
  PlainDqn(models::ModelSpec spec, PlainDqnOptions options, at::Device device = at::kCPU);
  ~PlainDqn();

  // One update: forward, loss, backward, clipping, Adam step, target update.
  // Returns the batch's new priorities |TD| (what a prioritized replay
  // would receive; the one device-to-host copy of an update).
  std::vector<double> Update(const PlainDqnBatch& batch);
  // Greedy actions for observations [B, ...] (no gradient).
  at::Tensor GreedyActions(const at::Tensor& observation) const;

  // The online network's parameters, named "<layer>.<param>" (what
  // models::EncodeWeights and the evaluator take).
  models::NamedTensors NamedParameters() const;
  int64_t updates() const { return updates_; }
  double last_loss() const { return last_loss_; }

 private:
  struct Optimizer;
  using Parameters = std::vector<std::vector<at::Tensor>>;  // per layer, per param

  at::Tensor Forward(const Parameters& params, const at::Tensor& obs) const;
  std::vector<at::Tensor> Flat(const Parameters& params) const;

  models::ModelSpec spec_;
  PlainDqnOptions options_;
  at::Device device_;
  Parameters online_;
  Parameters target_;
  std::unique_ptr<Optimizer> optimizer_;
  int64_t updates_ = 0;
  double last_loss_ = 0;
};

}  // namespace rlswarm::bench
