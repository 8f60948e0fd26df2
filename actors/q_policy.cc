#include "actors/q_policy.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/errors.h"
#include "models/dtype_translation.h"
#include "models/model_spec.h"
#include "models/q_network.h"
#include "models/weights_wire.h"

namespace rlswarm::actors {

namespace {
// The intra-op thread count every inference thread uses. OpenMP keeps the
// count per thread (omp_set_num_threads), so each thread that runs
// Evaluate applies it once; without that, a thread other than the one that
// called SetInferenceThreads would run OpenBLAS's sgemm on every core, with
// spinning OpenMP workers that starve the envs and the replay client.
std::atomic<int> inference_threads{1};
thread_local int applied_threads = 0;
}  // namespace

void ApplyInferenceThreads() {
  const int wanted = inference_threads.load(std::memory_order_relaxed);
  if (applied_threads != wanted) {
    at::set_num_threads(wanted);
    applied_threads = wanted;
  }
}

void SetInferenceThreads(int threads) {
  inference_threads = std::max(1, threads);
  ApplyInferenceThreads();
}

struct QPolicy::Impl {
  models::QNetwork network;
  std::vector<int64_t> sample_shape;
  at::ScalarType observation_type;
};

namespace {

// Observations are float, bool or byte arrays (envs/env_spec.h); integer
// observations wider than a byte do not occur.
at::ScalarType ObservationType(DType dtype) {
  if (dtype == DType::kInt32 || dtype == DType::kInt64) {
    throw InvalidArgument("QPolicy: unsupported observation dtype");
  }
  return models::ToScalarType(dtype);
}

}  // namespace

QPolicy::QPolicy(const models::ModelSpec& spec, std::uint64_t seed, DType observation_dtype)
    : impl_(new Impl{models::QNetwork(spec, seed), spec.sample_shape,
                     ObservationType(observation_dtype)}),
      num_actions_(spec.num_actions) {
  std::int64_t elements = 1;
  for (auto d : spec.sample_shape) elements *= d;
  observation_bytes_ = static_cast<std::size_t>(elements) * DTypeSize(observation_dtype);
}

QPolicy::~QPolicy() = default;

void QPolicy::Evaluate(std::span<const std::byte> observations, std::int64_t rows,
                       std::span<float> q_out) {
  if (observations.size() != static_cast<std::size_t>(rows) * observation_bytes_ ||
      q_out.size() != static_cast<std::size_t>(rows * num_actions_)) {
    throw InvalidArgument("QPolicy::Evaluate: buffer sizes do not match " + std::to_string(rows) +
                          " rows");
  }
  ApplyInferenceThreads();
  c10::InferenceMode guard;
  std::vector<int64_t> shape = {rows};
  shape.insert(shape.end(), impl_->sample_shape.begin(), impl_->sample_shape.end());
  const at::Tensor obs = at::from_blob(const_cast<std::byte*>(observations.data()), shape,
                                       at::TensorOptions().dtype(impl_->observation_type));
  const at::Tensor q = impl_->network.Forward(obs).to(at::kFloat).contiguous();
  std::memcpy(q_out.data(), q.data_ptr<float>(), q_out.size_bytes());
}

void QPolicy::LoadWeights(const std::vector<Payload>& blob) {
  const models::WeightsPart part = models::DecodeWeights(blob);
  if (part.num_shards != 1) {
    throw InvalidArgument("QPolicy: a weights blob of one shard of " +
                          std::to_string(part.num_shards) + " (merge the parts first)");
  }
  c10::AutoGradMode no_grad(false);
  impl_->network.LoadParameters(part.tensors);
}

}  // namespace rlswarm::actors
