#include "bench/dqn_update_case.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "bench/plain_dqn_update.h"
#include "config/experiment_config.h"
#include "learner/algorithms/dqn_learner.h"
#include "models/dtype_translation.h"
#include "replay/service/transition.h"

namespace rlswarm::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Updates per second of `update` over `seconds` after 5 warm-up updates;
// `sync` waits for queued device work.
template <class F, class S>
double UpdatesPerSec(double seconds, F&& update, S&& sync) {
  for (int i = 0; i < 5; ++i) update();
  sync();
  int64_t n = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    for (int i = 0; i < 4; ++i) update();
    sync();
    n += 4;
    now = Clock::now();
  }
  return n / std::chrono::duration<double>(now - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// `rows` random rows of the transition signature: observations 0/1 (as
// MinAtar's grids are) or normal floats, actions in [0, num_actions).
replay::SampledBatch RandomTransitions(const replay::Signature& signature, int64_t rows,
                                       int64_t num_actions) {
  std::mt19937_64 rng(0);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int64_t> action(0, num_actions - 1);
  replay::SampledBatch batch;
  for (int64_t i = 0; i < rows; ++i) {
    batch.keys.push_back(static_cast<uint64_t>(i));
    batch.priorities.push_back(1);
    batch.probabilities.push_back(1.0 / static_cast<double>(rows));
    batch.table_sizes.push_back(rows);
    batch.times_sampled.push_back(1);
    batch.policy_versions.push_back(0);
    batch.insert_times_ns.push_back(0);
  }
  for (const replay::FieldSpec& spec : signature.fields) {
    replay::SampledField field;
    field.name = spec.name;
    field.dtype = spec.dtype;
    field.shape = {rows};
    int64_t per_row = 1;
    for (int64_t d : spec.shape) {
      field.shape.push_back(d);
      per_row *= d;
    }
    const int64_t n = rows * per_row;
    field.num_bytes = static_cast<size_t>(n) * DTypeSize(spec.dtype);
    field.data = std::shared_ptr<std::byte[]>(new std::byte[field.num_bytes]);
    std::byte* out = field.data.get();
    for (int64_t i = 0; i < n; ++i) {
      if (spec.name == replay::transition::kAction) {
        const int64_t a = action(rng);
        std::memcpy(out + i * 8, &a, 8);
      } else if (spec.name == replay::transition::kDiscount) {
        const float d = 0.99f * 0.99f * 0.99f;
        std::memcpy(out + i * 4, &d, 4);
      } else if (spec.dtype == DType::kFloat32) {
        const float x = normal(rng);
        std::memcpy(out + i * 4, &x, 4);
      } else {  // uint8 / bool grids
        out[i] = static_cast<std::byte>(rng() % 4 == 0);
      }
    }
    batch.fields.push_back(std::move(field));
  }
  return batch;
}

// The sampled bytes as the plain update's CPU tensors (copies; the row's
// timings start after this).
PlainDqnBatch AsPlainBatch(const replay::SampledBatch& batch, at::Device device) {
  auto tensor = [&](const char* name) {
    for (const replay::SampledField& f : batch.fields) {
      if (f.name != name) continue;
      return at::from_blob(f.data.get(), f.shape,
                           at::TensorOptions().dtype(models::ToScalarType(f.dtype)))
          .clone()
          .to(device);
    }
    throw std::runtime_error(std::string("no field ") + name);
  };
  namespace t = replay::transition;
  PlainDqnBatch b;
  b.observation = tensor(t::kObservation);
  b.action = tensor(t::kAction).reshape(-1);
  b.reward = tensor(t::kReward).reshape(-1);
  b.discount = tensor(t::kDiscount).reshape(-1);
  b.next_observation = tensor(t::kNextObservation);
  return b;
}

}  // namespace

nlohmann::json MeasureDqnUpdate(const std::string& config_file, int64_t batch,
                                const DqnUpdateCaseOptions& options) {
  config::ExperimentConfig config =
      config::ExperimentConfig::Load(config_file, {"learner.batch_size=" + std::to_string(batch)});
  const at::Device device(options.device == "cuda" ? at::Device("cuda:0") : at::Device(at::kCPU));
  auto sync = [&] {
    if (device.is_cuda()) at::empty({1}, at::TensorOptions().device(device)).cpu();
  };

  // What `rlswarm learner` builds from the config, without replay,
  // publishing or checkpoints.
  replay::ReplaySamplerOptions sampler =
      config.replay.ToSamplerOptions(config.security.ToClientOptions());
  sampler.endpoints.clear();
  learner::ApeXOptions lo =
      config.learner.ToApeXOptions(sampler, config.security.ToServerOptions());
  lo.publish_interval = 0;
  lo.checkpoint_dir.clear();
  lo.checkpoint_interval = 0;
  lo.update_priorities = false;
  lo.model.device = device;
  const models::ModelSpec spec = config.ModelSpec();
  learner::DqnLearner learner(spec, lo, config.learner.ToDqnOptions(), learner::ShardMesh{});
  learner::BatchStager stager(device);

  PlainDqn plain(spec, PlainDqnOptionsOf(config), device);

  const replay::SampledBatch sampled =
      RandomTransitions(config.TransitionSignature(), batch, spec.num_actions);
  const PlainDqnBatch plain_batch = AsPlainBatch(sampled, device);

  std::vector<double> learner_reps, plain_reps;
  for (int r = 0; r < options.reps; ++r) {
    learner_reps.push_back(UpdatesPerSec(
        options.seconds, [&] { learner.UpdateOn(stager.Stage(sampled)); }, sync));
    plain_reps.push_back(UpdatesPerSec(
        options.seconds, [&] { plain.Update(plain_batch); }, sync));
  }
  const double ups = Median(learner_reps);
  const double plain_ups = Median(plain_reps);
  return {{"case", "dqn_update"},
          {"config", std::filesystem::path(config_file).filename().string()},
          {"model", spec.name},
          {"batch", batch},
          {"world_size", 1},
          {"device", device.str()},
          {"params", spec.Numel()},
          {"strategy", config.learner.strategy},
          {"updates_per_sec", ups},
          {"plain_updates_per_sec", plain_ups},
          {"time_ratio_to_plain", plain_ups / ups},
          {"updates_per_sec_reps", learner_reps},
          {"plain_updates_per_sec_reps", plain_reps}};
}

}  // namespace rlswarm::bench
