#pragma once

// QPolicy: batched Q-value inference for actors and evaluation, on CPU, in
// LibTorch inference mode. Observations are wrapped without copying
// (at::from_blob over the VectorEnv's buffer) and cast to float32 inside the
// network's first op; Q-values come back into a caller buffer. This is the
// only actor code that includes LibTorch, so the actor loop stays plain C++.
//
// Not thread-safe: one QPolicy per actor thread. The caller sets the
// process's intra-op threads (one per actor process in a swarm).

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

// Sets LibTorch's intra-op threads for every thread that runs
// QPolicy::Evaluate (default 1: the swarm scales by processes, and one
// thread per forward pass of a few hundred rows is fastest here).
void SetInferenceThreads(int threads);
// Applies that count to the calling thread (once per thread): every
// inference entry point calls it first.
void ApplyInferenceThreads();

class QPolicy {
 public:
  // A network of `spec`, initialised from `seed` until weights arrive;
  // observations are `observation_dtype` (float32, or bool for MinAtar).
  QPolicy(const models::ModelSpec& spec, std::uint64_t seed, DType observation_dtype);
  ~QPolicy();
  QPolicy(const QPolicy&) = delete;
  QPolicy& operator=(const QPolicy&) = delete;

  // Q-values of `rows` observations (row-major, the spec's sample shape
  // each) into q_out ([rows, num_actions]).
  void Evaluate(std::span<const std::byte> observations, std::int64_t rows, std::span<float> q_out);
  // Replaces the parameters with a weights blob (models/weights_wire.h; one
  // whole-model part). Throws InvalidArgument on a malformed blob or names
  // and shapes that do not match the network (the old weights stay).
  void LoadWeights(const std::vector<Payload>& blob);
  std::int64_t num_actions() const { return num_actions_; }
  std::size_t observation_bytes() const { return observation_bytes_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t num_actions_ = 0;
  std::size_t observation_bytes_ = 0;
};

}  // namespace rlswarm::actors
