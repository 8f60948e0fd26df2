// replay_load_client: one process of the multi-process replay tests. It
// writes CartPole-shaped transitions (the signature `rlswarm replay` serves
// for CartPole-v1) to every shard, then samples and sends priorities back.
//
//   replay_load_client --endpoints EP0,EP1,... --client-id K --items N
//                      [--sample-rounds R] [--batch B]
//
// Item i of client K: observation [K, i, 0, 0], action i % 2, reward K,
// discount 0.99, next_observation [K, i + 1, 0, 0], so any sampled row can be
// checked for integrity. Prints one JSON line with what it did; exits 0 when
// every item was acknowledged and every sampled row was intact, 1 otherwise.

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/logging.h"
#include "replay/service/replay_sampler.h"
#include "replay/service/replay_writer.h"
#include "replay/service/transition.h"

namespace {

using namespace rlswarm::replay;

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) out.push_back(item);
  return out;
}

// True if row i of the batch is a row some client wrote.
bool RowIsIntact(const SampledBatch& batch, std::size_t i) {
  const auto* obs = reinterpret_cast<const float*>(batch.fields[0].data.get()) + 4 * i;
  const auto* action = reinterpret_cast<const std::int64_t*>(batch.fields[1].data.get()) + i;
  const auto* reward = reinterpret_cast<const float*>(batch.fields[2].data.get()) + i;
  const auto* discount = reinterpret_cast<const float*>(batch.fields[3].data.get()) + i;
  const auto* next = reinterpret_cast<const float*>(batch.fields[4].data.get()) + 4 * i;
  return *reward == obs[0] && *action == static_cast<std::int64_t>(obs[1]) % 2 &&
         *discount == 0.99f && next[0] == obs[0] && next[1] == obs[1] + 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> endpoints;
  int client_id = 0;
  std::int64_t items = 1000;
  int sample_rounds = 0;
  std::int64_t batch_size = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--endpoints") {
      endpoints = Split(value);
    } else if (flag == "--client-id") {
      client_id = std::atoi(value.c_str());
    } else if (flag == "--items") {
      items = std::atoll(value.c_str());
    } else if (flag == "--sample-rounds") {
      sample_rounds = std::atoi(value.c_str());
    } else if (flag == "--batch") {
      batch_size = std::atoll(value.c_str());
    } else {
      std::fprintf(stderr, "replay_load_client: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  rlswarm::InitLogging("load-client", spdlog::level::warn);
  const Signature signature =
      TransitionSignature(rlswarm::DType::kFloat32, {4}, rlswarm::DType::kInt64, {});
  ReplayWriterOptions writer_options;
  writer_options.endpoints = endpoints;
  writer_options.signature = signature;
  writer_options.max_batch_items = 128;
  ReplayWriter writer(writer_options);
  for (std::int64_t i = 0; i < items; ++i) {
    const float k = static_cast<float>(client_id);
    const float step = static_cast<float>(i);
    const float obs[4] = {k, step, 0, 0};
    const float next[4] = {k, step + 1, 0, 0};
    const std::int64_t action = i % 2;
    const float reward = k;
    const float discount = 0.99f;
    const std::int64_t one[1] = {1};
    const std::int64_t row[2] = {1, 4};
    InsertBatch batch;
    batch.fields = {
        {"observation", rlswarm::DType::kFloat32, row, std::as_bytes(std::span(obs))},
        {"action", rlswarm::DType::kInt64, one, std::as_bytes(std::span(&action, 1))},
        {"reward", rlswarm::DType::kFloat32, one, std::as_bytes(std::span(&reward, 1))},
        {"discount", rlswarm::DType::kFloat32, one, std::as_bytes(std::span(&discount, 1))},
        {"next_observation", rlswarm::DType::kFloat32, row, std::as_bytes(std::span(next))}};
    batch.policy_version = client_id;
    writer.Append(batch);
  }
  const bool flushed = writer.Flush(std::chrono::seconds(30));
  const ReplayWriterStats stats = writer.stats();

  std::int64_t sampled = 0;
  std::int64_t corrupt = 0;
  std::int64_t updated = 0;
  if (sample_rounds > 0) {
    ReplaySamplerOptions sampler_options;
    sampler_options.endpoints = endpoints;
    sampler_options.seed = static_cast<std::uint64_t>(client_id) + 1;
    ReplaySampler sampler(sampler_options);
    for (int round = 0; round < sample_rounds; ++round) {
      const SampledBatch batch = sampler.Sample(batch_size);
      std::vector<double> priorities(batch.keys.size());
      for (std::size_t i = 0; i < batch.keys.size(); ++i) {
        corrupt += !RowIsIntact(batch, i);
        priorities[i] = 1.0 + static_cast<double>(client_id);
      }
      sampled += batch.size();
      updated += sampler.UpdatePriorities(batch.keys, priorities).updated;
    }
  }
  std::printf(
      "{\"client\": %d, \"acknowledged\": %lld, \"dropped\": %lld, \"sampled\": %lld, "
      "\"corrupt\": %lld, \"updated\": %lld}\n",
      client_id, static_cast<long long>(stats.items_acknowledged),
      static_cast<long long>(stats.items_dropped), static_cast<long long>(sampled),
      static_cast<long long>(corrupt), static_cast<long long>(updated));
  const bool ok = flushed && stats.items_acknowledged == items && corrupt == 0;
  return ok ? 0 : 1;
}
