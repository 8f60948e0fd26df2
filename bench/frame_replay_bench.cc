// frame_replay_bench: what a replay shard's memory costs per stored Atari
// transition, with frame sharing (replay.frame_sharing: each distinct
// frame once) and without (every observation and next observation whole),
// on real frames in the same run.
//
// Pong through ale-py's vector env (configs/atari_pong.yaml's preprocessing:
// 84x84 grayscale, a stack of 4, frame skip 4, sticky actions), random
// actions, 3-step transitions built by the actors' NStepAccumulator, into a
// Table of --capacity items filled to capacity (so the oldest items have
// been evicted and their frames freed). Per mode:
//   bytes_per_item      the table's storage (item columns, frame pool, its
//                       hash index) over the items it holds;
//   rss_bytes_per_item  the process's resident memory grown while the table
//                       was built and filled, over the items: what the
//                       operating system was asked for;
//   insert_items_per_sec, sample_items_per_sec  (batches of --batch draws):
//                       the cost of hashing frames on insert and of
//                       gathering them on sample.
// The env is stepped once; both tables receive the same transitions.
//
//   frame_replay_bench [--capacity N] [--envs N] [--batch B]
//
// Needs a Python with gymnasium and ale-py (the active venv or the
// repository's .venv/); prints one JSON object.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/random.h"
#include "envs/vector_env.h"
#include "replay/service/n_step.h"
#include "replay/service/transition.h"
#include "replay/table.h"

namespace {

using namespace rlswarm;
using Clock = std::chrono::steady_clock;

std::int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

struct Mode {
  std::string name;
  std::vector<std::string> frame_fields;
  std::int64_t rss_grown = 0;  // resident bytes grown while building and filling it
  std::optional<replay::Table> table;
  double insert_seconds = 0;
};

// Inserts the ready transitions into every mode's table, timing each and
// adding the resident memory it grew by; returns how many.
std::int64_t InsertReady(const replay::TransitionColumns& ready, const envs::EnvSpec& spec,
                         std::vector<Mode>& modes) {
  const std::int64_t n = ready.size();
  std::vector<std::int64_t> obs_shape = {n};
  obs_shape.insert(obs_shape.end(), spec.observation.shape.begin(), spec.observation.shape.end());
  const std::vector<std::int64_t> scalar_shape = {n};
  replay::InsertBatch items;
  items.fields = {
      {replay::transition::kObservation, spec.observation.dtype, obs_shape, ready.observation},
      {replay::transition::kAction, DType::kInt64, scalar_shape, ready.action},
      {replay::transition::kReward, DType::kFloat32, scalar_shape,
       std::as_bytes(std::span(ready.reward))},
      {replay::transition::kDiscount, DType::kFloat32, scalar_shape,
       std::as_bytes(std::span(ready.discount))},
      {replay::transition::kNextObservation, spec.observation.dtype, obs_shape,
       ready.next_observation}};
  items.priorities = ready.priority;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const std::int64_t before = ResidentBytes();
    const auto start = Clock::now();
    modes[m].table->Insert(items);
    modes[m].insert_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    modes[m].rss_grown += ResidentBytes() - before;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"frame_replay_bench: replay memory per Atari transition, frames shared or not"};
  std::int64_t capacity = 20000;
  std::int64_t num_envs = 8;
  std::int64_t batch = 32;
  app.add_option("--capacity", capacity, "Items per table (filled to capacity, then 10% more)");
  app.add_option("--envs", num_envs, "Pong envs in the vector env");
  app.add_option("--batch", batch, "Draws per sample call");
  CLI11_PARSE(app, argc, argv);
  InitLogging("frame-replay-bench", spdlog::level::warn);

  envs::VectorEnvOptions env_options;
  env_options.num_envs = num_envs;
  env_options.env.vectorization_mode = "vector_entry_point";
  env_options.env.kwargs_json =
      R"({"frameskip": 4, "maxpool": true, "img_height": 84, "img_width": 84,
          "grayscale": true, "stack_num": 4, "repeat_action_probability": 0.25,
          "noop_max": 30, "reward_clipping": false, "episodic_life": false})";
  envs::VectorEnv env("gymnasium:ALE/Pong-v5", env_options);
  const envs::EnvSpec& spec = env.spec();
  const replay::Signature signature = replay::TransitionSignature(
      spec.observation.dtype, spec.observation.shape, DType::kInt64, {});
  const std::size_t obs_bytes = env.observation_bytes();

  // Both tables exist at once (one env run feeds both), so resident memory is
  // measured around each table's construction and its share of the inserts.
  std::vector<Mode> modes(2);
  modes[0].name = "frames_shared";
  modes[0].frame_fields = {replay::transition::kObservation, replay::transition::kNextObservation};
  modes[1].name = "inline";
  for (std::size_t m = 0; m < modes.size(); ++m) {
    replay::TableOptions options;
    options.name = modes[m].name;
    options.signature = signature;
    options.capacity = capacity;
    options.selector.kind = replay::SelectorKind::kPrioritized;
    options.frame_fields = modes[m].frame_fields;
    const std::int64_t before = ResidentBytes();
    modes[m].table.emplace(options);
    modes[m].rss_grown += ResidentBytes() - before;
  }

  replay::NStepAccumulator n_step({.n = 3, .gamma = 0.99}, num_envs, obs_bytes,
                                  sizeof(std::int64_t));
  std::vector<std::int64_t> actions(static_cast<std::size_t>(num_envs));
  std::vector<float> zeros(static_cast<std::size_t>(num_envs), 0.0f);
  std::vector<std::byte> observations(obs_bytes * num_envs);
  Rng rng(7);
  env.Reset(0);
  const std::int64_t target = capacity + capacity / 10;
  std::int64_t inserted = 0;
  const auto env_start = Clock::now();
  std::int64_t env_steps = 0;
  while (inserted < target) {
    // V of the current observations completes the transitions that wait
    // for it (zeros: priorities do not matter here); they go in now.
    n_step.SetCurrentValues(zeros);
    if (n_step.ready().size() > 0) {
      inserted += InsertReady(n_step.ready(), spec, modes);
      n_step.ClearReady();
    }
    std::copy_n(env.observations(), observations.size(), observations.data());
    for (auto& a : actions) {
      a = static_cast<std::int64_t>(rng.NextU64() %
                                    static_cast<std::uint64_t>(spec.action.num_actions));
    }
    env.Step(actions);
    env_steps += num_envs;
    n_step.Observe({.observations = observations,
                    .actions = std::as_bytes(std::span(actions)),
                    .q_taken = zeros,
                    .rewards = {env.rewards(), static_cast<std::size_t>(num_envs)},
                    .terminated = {env.terminated(), static_cast<std::size_t>(num_envs)},
                    .truncated = {env.truncated(), static_cast<std::size_t>(num_envs)},
                    .next_observations = {env.observations(), obs_bytes * num_envs},
                    .final_observations = {env.final_observations(), obs_bytes * num_envs},
                    .skipped = {env.reset_steps(), static_cast<std::size_t>(num_envs)}});
    if (!n_step.truncated_envs().empty()) {
      n_step.SetFinalValues(std::vector<float>(n_step.truncated_envs().size(), 0.0f));
    }
  }
  const double env_seconds = std::chrono::duration<double>(Clock::now() - env_start).count();

  nlohmann::json rows = nlohmann::json::array();
  double bytes_per_item[2] = {0, 0};
  for (std::size_t m = 0; m < modes.size(); ++m) {
    replay::Table& table = *modes[m].table;
    const auto start = Clock::now();
    std::int64_t drawn = 0;
    while (std::chrono::duration<double>(Clock::now() - start).count() < 2.0) {
      drawn += table.Sample({.batch_size = batch}).size();
    }
    const double sample_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const replay::TableInfo info = table.Info();
    bytes_per_item[m] = static_cast<double>(info.storage_bytes) / static_cast<double>(info.size);
    rows.push_back(
        {{"mode", modes[m].name},
         {"items", info.size},
         {"bytes_per_item", bytes_per_item[m]},
         {"rss_bytes_per_item",
          static_cast<double>(modes[m].rss_grown) / static_cast<double>(info.size)},
         {"frames_live", info.frames.live},
         {"frames_per_item",
          static_cast<double>(info.frames.live) / static_cast<double>(info.size)},
         {"frame_bytes", info.frames.frame_bytes},
         {"insert_items_per_sec", static_cast<double>(inserted) / modes[m].insert_seconds},
         {"sample_items_per_sec", static_cast<double>(drawn) / sample_seconds}});
  }
  const nlohmann::json out = {
      {"env", "gymnasium:ALE/Pong-v5"},
      {"observation_shape", spec.observation.shape},
      {"observation_bytes", obs_bytes},
      {"n_step", 3},
      {"capacity", capacity},
      {"env_steps", env_steps},
      {"env_steps_per_sec", static_cast<double>(env_steps) / env_seconds},
      {"results", rows},
      {"memory_ratio_inline_to_shared", bytes_per_item[1] / bytes_per_item[0]},
      {"goal_bytes_per_item", 8192},
  };
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
