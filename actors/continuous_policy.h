#pragma once

// ContinuousPolicy: batched CPU inference of a deterministic policy mu(s)
// and its twin critics Q(s, a) (models/continuous_networks.h) for TD3's
// actors and evaluation, in LibTorch inference mode, with observations
// wrapped without copying as QPolicy does. This and q_policy.cc are the
// actor code that includes LibTorch.
//
// Weights blobs hold the policy under "policy." names and, when the
// learner publishes them, the critics under "critic." (as the TD3 learner
// publishes both); a blob without critics updates the policy alone, and a
// blob without "policy." names is the policy alone under its own names (a
// checkpoint's, evaluate/checkpoint_weights.h).
//
// Not thread-safe: one per actor thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/dtype.h"
#include "common/payload.h"

namespace rlswarm::models {
struct ModelSpec;
}  // namespace rlswarm::models

namespace rlswarm::actors {

class ContinuousPolicy {
 public:
  // `critic` may be null (evaluation: no Q-values). Parameters from `seed`.
  ContinuousPolicy(const models::ModelSpec& policy, const models::ModelSpec* critic,
                   std::uint64_t seed, DType observation_dtype);
  ~ContinuousPolicy();
  ContinuousPolicy(const ContinuousPolicy&) = delete;
  ContinuousPolicy& operator=(const ContinuousPolicy&) = delete;

  // mu of `rows` observations into actions_out ([rows, action_dim]).
  void Actions(std::span<const std::byte> observations, std::int64_t rows,
               std::span<float> actions_out);
  // Q1(s, a) of `rows` observation and action rows into q_out ([rows]).
  // FailedPrecondition without critics.
  void FirstCritic(std::span<const std::byte> observations, std::span<const float> actions,
                   std::int64_t rows, std::span<float> q_out);
  // Throws InvalidArgument on a malformed blob or tensors that do not fit
  // the networks (the old weights stay).
  void LoadWeights(const std::vector<Payload>& blob);

  std::int64_t action_dim() const { return action_dim_; }
  std::size_t observation_bytes() const { return observation_bytes_; }
  bool has_critic() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t action_dim_ = 0;
  std::size_t observation_bytes_ = 0;
};

}  // namespace rlswarm::actors
