// actor_bench: env steps/s of one actor (VectorEnv + batched Q inference +
// n-step accumulation + sending to a real replay shard over tcp loopback),
// against the inference-only ceiling measured in the same run (the same
// forward passes on the same batch size, no envs, no sending).
//
//   actor_bench [--json] [--seconds S] [--envs 16,64,256]
//
// The replay shard runs in this process (its own threads); one intra-op
// thread for inference, as in an actor process.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/actor.h"
#include "actors/q_policy.h"
#include "common/logging.h"
#include "envs/registry.h"
#include "models/model_spec.h"
#include "models/q_networks.h"
#include "models/residual_networks.h"
#include "models/weights_wire.h"
#include "replay/service/replay_service.h"
#include "replay/service/transition.h"

namespace {

using namespace rlswarm;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string model;
  std::string env;
  models::ModelSpec spec;
};

double InferenceCeilingOnThisThread(const Case& c, std::int64_t envs, double seconds);

// Runs on its own thread, as the actor loop does (OpenMP settings are per
// thread), after a warm-up.
double InferenceCeiling(const Case& c, std::int64_t envs, double seconds) {
  double result = 0;
  std::thread worker([&] { result = InferenceCeilingOnThisThread(c, envs, seconds); });
  worker.join();
  return result;
}

double InferenceCeilingOnThisThread(const Case& c, std::int64_t envs, double seconds) {
  const auto spec = envs::MakeEnv(c.env)->spec();
  actors::QPolicy policy(c.spec, 1, spec.observation.dtype);
  std::vector<std::byte> obs(static_cast<std::size_t>(envs) * policy.observation_bytes(),
                             std::byte{0});
  std::vector<float> q(static_cast<std::size_t>(envs * policy.num_actions()));
  const auto warm_up = Clock::now();
  while (Clock::now() - warm_up < std::chrono::milliseconds(200)) policy.Evaluate(obs, envs, q);
  std::int64_t rows = 0;
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    policy.Evaluate(obs, envs, q);
    rows += envs;
  }
  return static_cast<double>(rows) / std::chrono::duration<double>(Clock::now() - start).count();
}

// What one weights refresh costs the actor's thread: QPolicy::LoadWeights
// of one published version (decode and copy into the policy's parameters),
// the median of 21.
double RefreshSeconds(const Case& c) {
  const auto spec = envs::MakeEnv(c.env)->spec();
  actors::QPolicy policy(c.spec, 1, spec.observation.dtype);
  const std::vector<Payload> blob = models::EncodeWeights(models::InitNamedParameters(c.spec, 2));
  std::vector<double> times;
  for (int i = 0; i < 21; ++i) {
    const auto start = Clock::now();
    policy.LoadWeights(blob);
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double ActorSteps(const Case& c, std::int64_t envs, double seconds) {
  const auto spec = envs::MakeEnv(c.env)->spec();
  const replay::Signature signature = replay::TransitionSignature(
      spec.observation.dtype, spec.observation.shape, DType::kInt64, {});
  replay::ReplayServiceOptions shard_options;
  shard_options.table.signature = signature;
  shard_options.table.capacity = 1 << 18;
  shard_options.table.selector.kind = replay::SelectorKind::kPrioritized;
  shard_options.server.endpoint = "tcp://127.0.0.1:*";
  replay::ReplayService shard(shard_options);
  shard.Start();

  actors::ActorOptions options;
  options.env_name = c.env;
  options.env.num_envs = envs;
  options.exploration.schedule = actors::EpsilonSchedule::kFixed;
  options.exploration.epsilon = 0.1;
  replay::ReplayWriterOptions writer;
  writer.endpoints = {shard.endpoint()};
  writer.signature = signature;
  writer.max_batch_items = std::max<std::int64_t>(256, envs);
  actors::Actor actor(options, c.spec, 1, writer);
  std::thread run([&] { actor.Run(); });
  // Warm up, then measure the steady state over `seconds`.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::int64_t before = actor.stats().env_steps;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::int64_t after = actor.stats().env_steps;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  actor.Stop();
  run.join();
  const actors::ActorStats stats = actor.stats();
  std::fprintf(
      stderr,
      "  %s %lld envs: %lld steps, writer appended %lld acked %lld dropped %lld retried %lld\n",
      c.model.c_str(), static_cast<long long>(envs), static_cast<long long>(stats.env_steps),
      static_cast<long long>(stats.writer.items_appended),
      static_cast<long long>(stats.writer.items_acknowledged),
      static_cast<long long>(stats.writer.items_dropped),
      static_cast<long long>(stats.writer.batches_retried));
  return static_cast<double>(after - before) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actor_bench: env steps/s of one actor vs the inference-only ceiling"};
  bool json = false;
  double seconds = 2.0;
  std::vector<std::int64_t> env_counts = {16, 64, 256};
  app.add_flag("--json", json, "Print one JSON object");
  app.add_option("--seconds", seconds, "Seconds per measurement");
  app.add_option("--envs", env_counts, "Env counts")->delimiter(',');
  std::string only_model;
  bool skip_ceiling = false;
  app.add_option("--model", only_model,
                 "Only this model (cartpole_mlp, minatar_net or minatar_large)");
  app.add_flag("--skip-ceiling", skip_ceiling, "Skip the inference-only ceiling (profiling)");
  CLI11_PARSE(app, argc, argv);
  InitLogging("actor-bench", spdlog::level::warn);
  actors::SetInferenceThreads(1);

  models::MinAtarOptions minatar;
  minatar.in_channels = 4;
  minatar.num_actions = 6;
  minatar.channels_last_input = true;
  // configs/minatar_breakout_large.yaml's network.
  models::ResidualConvOptions large;
  large.in_channels = 4;
  large.num_actions = 6;
  large.channels = 64;
  large.stages = 3;
  large.blocks_per_stage = 2;
  large.hidden = 512;
  large.dueling = true;
  large.channels_last_input = true;
  const std::vector<Case> cases = {
      {"cartpole_mlp", "CartPole-v1", models::MakeMlpSpec(models::MlpOptions{})},
      {"minatar_net", "MinAtar/Breakout", models::MakeMinAtarSpec(minatar)},
      {"minatar_large", "MinAtar/Breakout", models::MakeResidualConvSpec(large)}};
  nlohmann::json results = nlohmann::json::array();
  for (const Case& c : cases) {
    if (!only_model.empty() && only_model != c.model) continue;
    for (std::int64_t envs : env_counts) {
      const double ceiling = skip_ceiling ? 1.0 : InferenceCeiling(c, envs, seconds);
      const double steps = ActorSteps(c, envs, seconds);
      const double refresh = RefreshSeconds(c);
      results.push_back({{"model", c.model},
                         {"env", c.env},
                         {"params", c.spec.Numel()},
                         {"envs", envs},
                         {"steps_per_sec", steps},
                         {"inference_ceiling_per_sec", ceiling},
                         {"refresh_seconds", refresh}});
      if (!json) {
        std::printf("%-13s %4lld envs: %10.0f steps/s, ceiling %10.0f (%3.0f%%), refresh %.3f ms\n",
                    c.model.c_str(), static_cast<long long>(envs), steps, ceiling,
                    100 * steps / ceiling, 1e3 * refresh);
      }
    }
  }
  if (json) std::printf("%s\n", nlohmann::json{{"results", results}}.dump().c_str());
  return 0;
}
