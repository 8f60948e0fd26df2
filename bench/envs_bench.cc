// envs_bench: environment steps per second on one core.
//
//   envs_bench [--json] [--seconds S] [--env NAME]
//
// For every env: "single" steps one Env through the public (checked) API,
// "vector64" steps a 64-env VectorEnv with one thread. Actions are uniform
// random, drawn ahead of time so the timing is the env's alone; episodes
// auto-reset. The process pins itself to one CPU. As a same-run yardstick of
// the machine's speed it also reports memcpy bandwidth (64 KiB blocks).
//
// JSON: {"results": [{"env", "mode", "steps_per_sec"}...], "baseline": {...}}

#include <fmt/format.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
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
  app.add_flag("--json", json, "Print JSON");
  app.add_option("--seconds", seconds, "Seconds per measurement")->check(CLI::PositiveNumber);
  app.add_option("--env", only, "Only this env");
  CLI11_PARSE(app, argc, argv);

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
  const double memcpy_gbs = MemcpyGigabytesPerSecond(seconds);
  if (json) {
    std::cout << nlohmann::json{{"results", results},
                                {"baseline", {{"memcpy_64KiB_GB_per_sec", memcpy_gbs}}}}
                     .dump(2)
              << "\n";
  } else {
    fmt::print("baseline: memcpy 64 KiB {:.1f} GB/s\n", memcpy_gbs);
  }
  return 0;
}
