// gymnasium_bench: what the Gymnasium path costs, against baselines measured
// in the same run on the same machine. Per case:
//   python_alone   the same vector env (gymnasium.make_vec, same kwargs and
//                  vectorization) stepped by a plain Python loop with random
//                  actions: the ceiling of any system that steps it;
//   vector_env     rlswarm's VectorEnv stepping it through its worker
//                  process (random actions, no network);
//   actor          a whole actor (batched inference, n-step, a real replay
//                  shard over tcp loopback);
//   native_actor   the same actor on rlswarm's built-in C++ version of the
//                  env, where there is one;
//   inference_alone  the actor's network alone (QPolicy::Evaluate on a batch
//                  of num_envs observations, one thread): rows per second.
// Ratios: vector_env and actor over python_alone, actor over native_actor,
// and the actor's ceiling when env and inference take turns on one core,
// 1 / (1/python_alone + 1/inference_alone), over python_alone.
//
//   gymnasium_bench [--json] [--seconds S] [--case cartpole|minatar_breakout|pong]
//
// Needs a Python with gymnasium (and ale-py, minatar for those cases): the
// active venv or the repository's .venv/. One intra-op thread for inference.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/actor.h"
#include "actors/q_policy.h"
#include "common/logging.h"
#include "config/model_section.h"
#include "envs/registry.h"
#include "envs/vector_env.h"
#include "models/model_spec.h"
#include "replay/service/replay_service.h"
#include "replay/service/transition.h"

namespace {

using namespace rlswarm;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  std::string gym_id;  // without "gymnasium:"
  std::string kwargs = "{}";
  std::string vectorization_mode;
  std::int64_t num_envs = 16;
  std::string native;  // rlswarm's built-in env, or ""
  std::string torso = "plain";
};

std::string Python() {
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {
    return std::string(venv) + "/bin/python";
  }
  return "python3";
}

envs::EnvOptions GymOptions(const Case& c) {
  envs::EnvOptions o;
  o.kwargs_json = c.kwargs;
  o.vectorization_mode = c.vectorization_mode;
  return o;
}

// The vector env stepped by Python alone, in a child process.
double PythonAlone(const Case& c, double seconds) {
  const std::string code = R"(
import json, sys, time
import gymnasium as gym, numpy as np
env_id, kwargs, mode, n, seconds = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
ns = env_id.split("/")[0]
if ns == "ALE":
    import ale_py
    gym.register_envs(ale_py)
if ns == "MinAtar":
    import minatar.gym
    minatar.gym.register_envs()
env = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode, **kwargs)
env.reset(seed=0)
env.action_space.seed(0)
def run(duration):
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < duration:
        env.step(env.action_space.sample())
        steps += n
    return steps / (time.perf_counter() - start)
run(0.3)
print(json.dumps({"steps_per_sec": run(seconds)}))
)";
  const std::string mode = c.vectorization_mode.empty() ? "sync" : c.vectorization_mode;
  const std::string command = Python() + " -c '" + code + "' '" + c.gym_id + "' '" + c.kwargs +
                              "' " + mode + " " + std::to_string(c.num_envs) + " " +
                              std::to_string(seconds);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return 0;
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe)) out += buffer;
  ::pclose(pipe);
  const auto j = nlohmann::json::parse(out.substr(out.find('{')), nullptr, false);
  return j.is_object() ? j.value("steps_per_sec", 0.0) : 0.0;
}

double VectorEnvSteps(const Case& c, double seconds) {
  envs::VectorEnvOptions o;
  o.num_envs = c.num_envs;
  o.env = GymOptions(c);
  envs::VectorEnv env("gymnasium:" + c.gym_id, o);
  env.Reset(0);
  std::vector<std::int64_t> actions(c.num_envs);
  Rng rng(1);
  auto run = [&](double duration) {
    std::int64_t steps = 0;
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::duration<double>(duration)) {
      for (auto& a : actions) {
        a = static_cast<std::int64_t>(rng.NextU64() %
                                      static_cast<std::uint64_t>(env.spec().action.num_actions));
      }
      env.Step(actions);
      steps += c.num_envs;
    }
    return static_cast<double>(steps) / std::chrono::duration<double>(Clock::now() - start).count();
  };
  run(0.3);
  return run(seconds);
}

models::ModelSpec NetworkOf(const envs::EnvSpec& spec, const Case& c) {
  config::ModelSection model;
  model.torso = c.torso;
  if (c.torso == "nature_cnn") model.minatar_hidden = 512;
  return model.ToSpec(spec);
}

// Rows per second of the actor's forward pass alone, on zero observations.
double InferenceAlone(const envs::EnvSpec& spec, const Case& c, double seconds) {
  actors::QPolicy policy(NetworkOf(spec, c), 1, spec.observation.dtype);
  const std::vector<std::byte> obs(policy.observation_bytes() * c.num_envs);
  std::vector<float> q(static_cast<std::size_t>(policy.num_actions() * c.num_envs));
  auto run = [&](double duration) {
    std::int64_t rows = 0;
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::duration<double>(duration)) {
      policy.Evaluate(obs, c.num_envs, q);
      rows += c.num_envs;
    }
    return static_cast<double>(rows) / std::chrono::duration<double>(Clock::now() - start).count();
  };
  run(0.3);
  return run(seconds);
}

double ActorSteps(const std::string& env_name, const envs::EnvOptions& env_options, const Case& c,
                  double seconds) {
  const envs::EnvSpec spec = envs::DescribeEnv(env_name, env_options);
  const models::ModelSpec net = NetworkOf(spec, c);
  const replay::Signature signature = replay::TransitionSignature(
      spec.observation.dtype, spec.observation.shape, DType::kInt64, {});
  replay::ReplayServiceOptions shard_options;
  shard_options.table.signature = signature;
  shard_options.table.capacity = c.torso == "nature_cnn" ? 1 << 14 : 1 << 18;
  shard_options.table.selector.kind = replay::SelectorKind::kPrioritized;
  shard_options.server.endpoint = "tcp://127.0.0.1:*";
  replay::ReplayService shard(shard_options);
  shard.Start();

  actors::ActorOptions options;
  options.env_name = env_name;
  options.env.num_envs = c.num_envs;
  options.env.env = env_options;
  options.exploration.schedule = actors::EpsilonSchedule::kFixed;
  options.exploration.epsilon = 0.1;
  replay::ReplayWriterOptions writer;
  writer.endpoints = {shard.endpoint()};
  writer.signature = signature;
  writer.max_batch_items = std::max<std::int64_t>(64, c.num_envs);
  actors::Actor actor(options, net, 1, writer);
  std::thread run([&] { actor.Run(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::int64_t before = actor.stats().env_steps;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::int64_t after = actor.stats().env_steps;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  actor.Stop();
  run.join();
  return static_cast<double>(after - before) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gymnasium_bench: the Gymnasium path against Python alone and native envs"};
  bool json = false;
  double seconds = 3.0;
  std::string only;
  app.add_flag("--json", json, "Print one JSON object");
  app.add_option("--seconds", seconds, "Seconds per measurement");
  app.add_option("--case", only, "Only this case: cartpole, minatar_breakout or pong");
  CLI11_PARSE(app, argc, argv);
  InitLogging("gymnasium-bench", spdlog::level::warn);
  actors::SetInferenceThreads(1);

  const std::vector<Case> cases = {
      {"cartpole", "CartPole-v1", "{}", "sync", 16, "CartPole-v1", "plain"},
      {"cartpole_own_vector", "CartPole-v1", "{}", "vector_entry_point", 16, "CartPole-v1",
       "plain"},
      {"minatar_breakout", "MinAtar/Breakout-v0", "{}", "sync", 16, "MinAtar/Breakout", "plain"},
      {"pong", "ALE/Pong-v5",
       R"({"repeat_action_probability": 0.25, "reward_clipping": false, "stack_num": 4})",
       "vector_entry_point", 8, "", "nature_cnn"},
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& c : cases) {
    if (!only.empty() && c.name.rfind(only, 0) != 0) continue;
    nlohmann::json row = {{"case", c.name},
                          {"env", "gymnasium:" + c.gym_id},
                          {"num_envs", c.num_envs},
                          {"vectorization_mode", c.vectorization_mode}};
    try {
      const double alone = PythonAlone(c, seconds);
      const double vector = VectorEnvSteps(c, seconds);
      const double actor = ActorSteps("gymnasium:" + c.gym_id, GymOptions(c), c, seconds);
      const double inference =
          InferenceAlone(envs::DescribeEnv("gymnasium:" + c.gym_id, GymOptions(c)), c, seconds);
      row["python_alone_steps_per_sec"] = alone;
      row["vector_env_steps_per_sec"] = vector;
      row["actor_steps_per_sec"] = actor;
      row["vector_env_ratio_to_python_alone"] = alone > 0 ? vector / alone : 0.0;
      row["actor_ratio_to_python_alone"] = alone > 0 ? actor / alone : 0.0;
      row["inference_alone_rows_per_sec"] = inference;
      row["one_core_ceiling_ratio_to_python_alone"] =
          alone > 0 ? 1.0 / (1.0 / alone + 1.0 / inference) / alone : 0.0;
      if (!c.native.empty()) {
        const double native = ActorSteps(c.native, {}, c, seconds);
        row["native_env"] = c.native;
        row["native_actor_steps_per_sec"] = native;
        row["actor_ratio_to_native_actor"] = actor / native;
      }
    } catch (const std::exception& e) {
      row["error"] = e.what();
    }
    if (!json) std::printf("%s\n", row.dump().c_str());
    rows.push_back(row);
  }
  if (json) std::printf("%s\n", nlohmann::json{{"results", rows}}.dump().c_str());
  return 0;
}
