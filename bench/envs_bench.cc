// envs_bench: environment steps per second on one core.
//
//   envs_bench [--json] [--seconds S] [--env NAME | --env plugin] [--plugin PATH]
//              [--rounds R]
//
// For every env: "single" steps one Env through the public (checked) API,
// "vector64" steps a 64-env VectorEnv with one thread. Actions are uniform
// random, drawn ahead of time so the timing is the env's alone; episodes
// auto-reset. The process pins itself to one CPU. As a same-run yardstick of
// the machine's speed it also reports memcpy bandwidth (64 KiB blocks).
//
// The plugin case (with every env, or alone with --env plugin) steps the C
// CartPole plugin (examples/plugin_env/, or --plugin PATH) and the built-in
// CartPole-v1 in turn, R rounds, and keeps the best of each: the ratio
// plugin / built-in is the cost of the plugin path (an indirect call and an
// observation copy per step).
//
// JSON: {"results": [{"env", "mode", "steps_per_sec"}...], "baseline": {...},
//        "plugin_vs_builtin": {"plugin", "rounds", "single": {"builtin",
//        "plugin", "ratio"}, "vector64": {...}}}

#include <fmt/format.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/random.h"
#include "envs/registry.h"
#include "envs/vector_env.h"

namespace {

using rlswarm::envs::ActionKind;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kActionTable = 1 << 16;  // power of two: index with a mask

// Runs `batch()` (which performs `steps_per_batch` env steps) until `seconds`
// have passed; returns steps per second. Checks the clock every few batches.
template <class F>
double Measure(double seconds, std::int64_t steps_per_batch, F&& batch) {
  for (int i = 0; i < 3; ++i) batch();  // warm up caches and branch predictors
  std::int64_t steps = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    for (int i = 0; i < 16; ++i) batch();
    steps += 16 * steps_per_batch;
    now = Clock::now();
  }
  return steps / std::chrono::duration<double>(now - start).count();
}

double BenchSingle(const std::string& name, double seconds) {
  auto env = rlswarm::envs::MakeEnv(name);
  const auto& spec = env->spec();
  std::vector<std::byte> obs(spec.observation.NumBytes());
  rlswarm::Rng rng(1);
  std::vector<std::int64_t> discrete(kActionTable);
  std::vector<float> continuous(kActionTable);
  for (std::size_t i = 0; i < kActionTable; ++i) {
    if (spec.action.kind == ActionKind::kDiscrete) {
      discrete[i] = static_cast<std::int64_t>(rng.Below(spec.action.num_actions));
    } else {
      continuous[i] =
          static_cast<float>(rng.Uniform(spec.action.array.Low(0), spec.action.array.High(0)));
    }
  }
  env->Reset(0, obs);
  std::size_t t = 0;
  constexpr int kBatch = 1024;
  if (spec.action.kind == ActionKind::kDiscrete) {
    return Measure(seconds, kBatch, [&] {
      for (int i = 0; i < kBatch; ++i) {
        const auto r = env->Step(discrete[t++ & (kActionTable - 1)], obs);
        if (r.terminated || r.truncated) env->Reset(std::nullopt, obs);
      }
    });
  }
  return Measure(seconds, kBatch, [&] {
    for (int i = 0; i < kBatch; ++i) {
      const auto r =
          env->Step(std::span<const float>(&continuous[t++ & (kActionTable - 1)], 1), obs);
      if (r.terminated || r.truncated) env->Reset(std::nullopt, obs);
    }
  });
}

double BenchVector(const std::string& name, std::int64_t num_envs, double seconds) {
  rlswarm::envs::VectorEnvOptions options;
  options.num_envs = num_envs;
  rlswarm::envs::VectorEnv venv(name, options);
  const auto& spec = venv.spec();
  venv.Reset(0);
  rlswarm::Rng rng(1);
  constexpr int kTables = 64;
  std::vector<std::vector<std::int64_t>> discrete(kTables, std::vector<std::int64_t>(num_envs));
  std::vector<std::vector<float>> continuous(kTables, std::vector<float>(num_envs));
  for (int k = 0; k < kTables; ++k) {
    for (std::int64_t i = 0; i < num_envs; ++i) {
      if (spec.action.kind == ActionKind::kDiscrete) {
        discrete[k][i] = static_cast<std::int64_t>(rng.Below(spec.action.num_actions));
      } else {
        continuous[k][i] =
            static_cast<float>(rng.Uniform(spec.action.array.Low(0), spec.action.array.High(0)));
      }
    }
  }
  std::size_t t = 0;
  if (spec.action.kind == ActionKind::kDiscrete) {
    return Measure(seconds, num_envs, [&] { venv.Step(discrete[t++ % kTables]); });
  }
  return Measure(seconds, num_envs, [&] { venv.Step(continuous[t++ % kTables]); });
}

// The C plugin and the built-in CartPole, measured in turn, best of `rounds`.
nlohmann::json ComparePluginWithBuiltIn(const std::string& plugin, double seconds, int rounds) {
  const std::string builtin = "CartPole-v1";
  double best[2][2] = {};  // [single, vector64][builtin, plugin]
  for (int r = 0; r < rounds; ++r) {
    best[0][0] = std::max(best[0][0], BenchSingle(builtin, seconds));
    best[0][1] = std::max(best[0][1], BenchSingle(plugin, seconds));
    best[1][0] = std::max(best[1][0], BenchVector(builtin, 64, seconds));
    best[1][1] = std::max(best[1][1], BenchVector(plugin, 64, seconds));
  }
  auto mode = [&](int m) {
    return nlohmann::json{
        {"builtin", best[m][0]}, {"plugin", best[m][1]}, {"ratio", best[m][1] / best[m][0]}};
  };
  return {{"plugin", plugin}, {"rounds", rounds}, {"single", mode(0)}, {"vector64", mode(1)}};
}

double MemcpyGigabytesPerSecond(double seconds) {
  std::vector<char> a(64 << 10, 1), b(64 << 10);
  const double calls_per_sec = Measure(seconds, 1, [&] {
    std::memcpy(b.data(), a.data(), a.size());
    asm volatile("" : : "r"(b.data()) : "memory");
  });
  return calls_per_sec * a.size() / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"envs_bench: environment steps per second on one core"};
  bool json = false;
  double seconds = 1.0;
  std::string only;
  std::string plugin = std::string("plugin:") + RLSWARM_CARTPOLE_PLUGIN;
  int rounds = 3;
  app.add_flag("--json", json, "Print JSON");
  app.add_option("--seconds", seconds, "Seconds per measurement")->check(CLI::PositiveNumber);
  app.add_option("--env", only, "Only this env; 'plugin': only the plugin case");
  app.add_option("--plugin", plugin, "The plugin env of the plugin case")->capture_default_str();
  app.add_option("--rounds", rounds, "Rounds of the plugin case (best of)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (rlswarm::envs::IsPluginEnv(only)) plugin = std::exchange(only, "plugin");

  cpu_set_t one_cpu;
  CPU_ZERO(&one_cpu);
  CPU_SET(0, &one_cpu);
  sched_setaffinity(0, sizeof(one_cpu), &one_cpu);

  nlohmann::json results = nlohmann::json::array();
  for (const std::string& name : rlswarm::envs::EnvNames()) {
    if (!only.empty() && name != only) continue;
    const double single = BenchSingle(name, seconds);
    const double vector64 = BenchVector(name, 64, seconds);
    results.push_back({{"env", name}, {"mode", "single"}, {"steps_per_sec", single}});
    results.push_back({{"env", name}, {"mode", "vector64"}, {"steps_per_sec", vector64}});
    if (!json) {
      fmt::print("{:<24} single {:>8.2f} M steps/s   vector64 {:>8.2f} M steps/s\n", name,
                 single / 1e6, vector64 / 1e6);
      std::fflush(stdout);
    }
  }
  nlohmann::json comparison;
  if (only.empty() || only == "plugin") {
    comparison = ComparePluginWithBuiltIn(plugin, seconds, rounds);
    for (const char* mode : {"single", "vector64"}) {
      results.push_back(
          {{"env", plugin}, {"mode", mode}, {"steps_per_sec", comparison[mode]["plugin"]}});
    }
    if (!json) {
      for (const char* mode : {"single", "vector64"}) {
        const auto& m = comparison[mode];
        fmt::print("plugin CartPole (C) {:<8} {:>8.2f} M steps/s, built-in {:>8.2f} M: {:.2f}x\n",
                   mode, m["plugin"].get<double>() / 1e6, m["builtin"].get<double>() / 1e6,
                   m["ratio"].get<double>());
      }
    }
  }
  const double memcpy_gbs = MemcpyGigabytesPerSecond(seconds);
  if (json) {
    nlohmann::json out = {{"results", results},
                          {"baseline", {{"memcpy_64KiB_GB_per_sec", memcpy_gbs}}}};
    if (!comparison.is_null()) out["plugin_vs_builtin"] = comparison;
    std::cout << out.dump(2) << "\n";
  } else {
    fmt::print("baseline: memcpy 64 KiB {:.1f} GB/s\n", memcpy_gbs);
  }
  return 0;
}
