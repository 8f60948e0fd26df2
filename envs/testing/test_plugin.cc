// A plugin library for envs/plugin_env_test.cc (built as a MODULE): good envs
// and every way a plugin can be wrong, one NAME each, in C++ behind the C ABI
// as a user's C++ plugin would be. Test code, not part of rlswarm.
//
//   (default), "counter"  discrete 3 actions; observation float32 (size,):
//                         [steps, last action, a draw from the env's own
//                         generator, ...]; reward = the action; action 2
//                         terminates. Config: {"size": 3, "max_episode_steps":
//                         10, "truncate_at": 0 (the env's own cut; 0 none),
//                         "name": "counter"}.
//   "continuous"          2 float32 actions in [-1, 1] x [0, 2]; observation
//                         float64 (2,) = the action; reward = their sum.
//   "image"               discrete 4; observation uint8 (3, 4, 4), no bounds
//                         given; every pixel = steps mod 256.
//   "wrong_abi"           a table of ABI version 999.
//   "no_step"             a table without step.
//   "bad_spec"            the spec of "counter" broken as config {"bad": WHAT}
//                         says (see BreakSpec).
//   "create_fails"        create fails with config {"message": "..."}.
//   "step_fails"          fails as config {"fail": "step" | "reset" |
//                         "nan_reward" | "silent"} says, at step
//                         {"at": 3} (steps counted per episode), or only
//                         once, at the env's {"at_total": N}th step.
//
// rlswarm_test_plugin_live_envs() counts created and not yet destroyed envs.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "envs/plugin_api.h"

namespace {

std::atomic<int> live_envs{0};

struct TestEnv {
  std::string kind;
  nlohmann::json config;
  std::string name;
  std::mt19937_64 rng;  // the standard fixes its output for a seed
  std::int64_t steps = 0;
  std::int64_t total_steps = 0;  // over every episode
  std::string error;
  std::vector<double> low, high;  // kept alive for spec()
};

TestEnv* Env(void* env) { return static_cast<TestEnv*>(env); }

void* CreateKind(const char* kind, const char* config_json, char* error, std::size_t size) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  auto fail = [&](const std::string& message) -> void* {
    std::snprintf(error, size, "%s", message.c_str());
    return nullptr;
  };
  if (!config.is_object()) return fail(std::string("config is not a JSON object: ") + config_json);
  if (std::string(kind) == "create_fails") {
    return fail(config.value("message", std::string("the test plugin refuses to create")));
  }
  auto* env = new TestEnv;
  env->kind = kind;
  env->config = std::move(config);
  env->name = env->config.value("name", std::string(kind));
  ++live_envs;
  return env;
}

template <const char* kKind>
void* Create(const char* config_json, char* error, std::size_t size) {
  return CreateKind(kKind, config_json, error, size);
}

void CounterSpec(TestEnv* env, rlswarm_env_spec* spec) {
  spec->name = env->name.c_str();
  spec->observation_dtype = RLSWARM_DTYPE_FLOAT32;
  spec->observation_rank = 1;
  spec->observation_shape[0] = env->config.value("size", 3);
  static const double kLow = -1e9, kHigh = 1e9;
  spec->observation_low = &kLow;
  spec->observation_high = &kHigh;
  spec->observation_bounds_count = 1;
  spec->num_actions = 3;
  spec->max_episode_steps = env->config.value("max_episode_steps", 10);
}

// The counter's spec with one defect.
void BreakSpec(TestEnv* env, rlswarm_env_spec* spec) {
  CounterSpec(env, spec);
  static const double kNaN = std::numeric_limits<double>::quiet_NaN();
  static const double kInf = std::numeric_limits<double>::infinity();
  static const double kZero = 0.0, kOne = 1.0, kTwo = 2.0;
  static const char kLong[] =
      "a name of more than one hundred and twenty-eight bytes, which is longer than any name "
      "rlswarm takes from a plugin, so that it refuses it";
  const std::string bad = env->config.value("bad", std::string());
  if (bad == "name_null") spec->name = nullptr;
  if (bad == "name_empty") spec->name = "";
  if (bad == "name_long") spec->name = kLong;
  if (bad == "name_binary") spec->name = "tab\there";
  if (bad == "dtype") spec->observation_dtype = 17;
  if (bad == "rank_zero") spec->observation_rank = 0;
  if (bad == "rank_large") spec->observation_rank = RLSWARM_PLUGIN_MAX_DIMS + 1;
  if (bad == "dim_zero") spec->observation_shape[0] = 0;
  if (bad == "too_large") {
    spec->observation_rank = 3;
    spec->observation_shape[0] = spec->observation_shape[1] = spec->observation_shape[2] =
        std::int64_t{1} << 40;
  }
  if (bad == "bounds_half") spec->observation_high = nullptr;
  if (bad == "bounds_count") spec->observation_bounds_count = 2;
  if (bad == "bounds_nan") spec->observation_low = &kNaN;
  if (bad == "bounds_order") spec->observation_low = &kTwo, spec->observation_high = &kOne;
  if (bad == "no_actions") spec->num_actions = 0;
  if (bad == "negative_actions") spec->num_actions = -2;
  if (bad == "both_actions") spec->action_dims = 1;
  auto continuous = [&](std::int32_t dims, const double* low, const double* high) {
    spec->num_actions = 0;
    spec->action_dims = dims;
    spec->action_low = low;
    spec->action_high = high;
  };
  if (bad == "action_dims") continuous(RLSWARM_PLUGIN_MAX_ACTION_DIMS + 1, &kZero, &kOne);
  if (bad == "action_bounds_missing") continuous(1, &kZero, nullptr);
  if (bad == "action_bounds_infinite") continuous(1, &kZero, &kInf);
  if (bad == "action_bounds_equal") continuous(1, &kOne, &kOne);
  if (bad == "max_episode_steps") spec->max_episode_steps = -1;
}

void Spec(void* handle, rlswarm_env_spec* spec) {
  TestEnv* env = Env(handle);
  if (env->kind == "bad_spec") return BreakSpec(env, spec);
  if (env->kind == "continuous") {
    env->low = {-1.0, 0.0};
    env->high = {1.0, 2.0};
    spec->name = "continuous";
    spec->observation_dtype = RLSWARM_DTYPE_FLOAT64;
    spec->observation_rank = 1;
    spec->observation_shape[0] = 2;
    spec->action_dims = 2;
    spec->action_low = env->low.data();
    spec->action_high = env->high.data();
    spec->max_episode_steps = 5;
    return;
  }
  if (env->kind == "image") {
    spec->name = "image";
    spec->observation_dtype = RLSWARM_DTYPE_UINT8;
    spec->observation_rank = 3;
    spec->observation_shape[0] = 3;
    spec->observation_shape[1] = spec->observation_shape[2] = 4;
    spec->num_actions = 4;
    return;
  }
  CounterSpec(env, spec);
}

void WriteCounter(TestEnv* env, float last_action, void* observation) {
  const int size = env->config.value("size", 3);
  auto* obs = static_cast<float*>(observation);
  obs[0] = static_cast<float>(env->steps);
  if (size > 1) obs[1] = last_action;
  for (int i = 2; i < size; ++i) obs[i] = static_cast<float>(env->rng() % 1000);
}

int Reset(void* handle, const std::uint64_t* seed, void* observation) {
  TestEnv* env = Env(handle);
  if (seed) env->rng.seed(*seed);
  env->steps = 0;
  if (env->kind == "step_fails" && env->config.value("fail", "") == "reset") {
    env->error = "the test plugin fails every reset";
    return 1;
  }
  if (env->kind == "continuous") {
    std::memset(observation, 0, 2 * sizeof(double));
  } else if (env->kind == "image") {
    std::memset(observation, 0, 3 * 4 * 4);
  } else {
    WriteCounter(env, -1.0f, observation);
  }
  return 0;
}

int Step(void* handle, const void* action, void* observation, rlswarm_step_result* result) {
  TestEnv* env = Env(handle);
  ++env->steps;
  ++env->total_steps;
  if (env->kind == "continuous") {
    const auto* a = static_cast<const float*>(action);
    const double obs[2] = {a[0], a[1]};
    std::memcpy(observation, obs, sizeof(obs));
    result->reward = a[0] + a[1];
    return 0;
  }
  const std::int64_t a = *static_cast<const std::int64_t*>(action);
  if (env->kind == "image") {
    std::memset(observation, static_cast<int>(env->steps % 256), 3 * 4 * 4);
    result->reward = static_cast<float>(a);
    return 0;
  }
  const bool fails_now = env->config.contains("at_total")
                             ? env->total_steps == env->config.value("at_total", 0)
                             : env->steps == env->config.value("at", 3);
  if (env->kind == "step_fails" && fails_now) {
    const std::string fail = env->config.value("fail", "step");
    if (fail == "nan_reward") {
      result->reward = std::numeric_limits<float>::quiet_NaN();
    } else {
      env->error =
          fail == "silent" ? "" : "simulated failure at step " + std::to_string(env->steps);
      return -1;
    }
  } else {
    result->reward = static_cast<float>(a);
  }
  result->terminated = a == 2;
  const int truncate_at = env->config.value("truncate_at", 0);
  result->truncated = truncate_at > 0 && env->steps >= truncate_at;
  WriteCounter(env, static_cast<float>(a), observation);
  return 0;
}

const char* LastError(void* handle) { return Env(handle)->error.c_str(); }

void Destroy(void* handle) {
  delete Env(handle);
  --live_envs;
}

constexpr char kCounter[] = "counter";
constexpr char kContinuous[] = "continuous";
constexpr char kImage[] = "image";
constexpr char kBadSpec[] = "bad_spec";
constexpr char kCreateFails[] = "create_fails";
constexpr char kStepFails[] = "step_fails";

template <const char* kKind>
constexpr rlswarm_env_plugin Table() {
  return {RLSWARM_PLUGIN_ABI_VERSION, Create<kKind>, Spec, Reset, Step, LastError, Destroy};
}

const rlswarm_env_plugin kCounterTable = Table<kCounter>();
const rlswarm_env_plugin kContinuousTable = Table<kContinuous>();
const rlswarm_env_plugin kImageTable = Table<kImage>();
const rlswarm_env_plugin kBadSpecTable = Table<kBadSpec>();
const rlswarm_env_plugin kCreateFailsTable = Table<kCreateFails>();
const rlswarm_env_plugin kStepFailsTable = Table<kStepFails>();
const rlswarm_env_plugin kWrongAbiTable = {999,  Create<kCounter>, Spec,   Reset,
                                           Step, LastError,        Destroy};
const rlswarm_env_plugin kNoStepTable = {
    RLSWARM_PLUGIN_ABI_VERSION, Create<kCounter>, Spec, Reset, nullptr, LastError, Destroy};

}  // namespace

extern "C" RLSWARM_PLUGIN_EXPORT const rlswarm_env_plugin* rlswarm_env_plugin_v1(const char* name) {
  const std::string n = name ? name : "counter";
  if (n == "counter") return &kCounterTable;
  if (n == "continuous") return &kContinuousTable;
  if (n == "image") return &kImageTable;
  if (n == "bad_spec") return &kBadSpecTable;
  if (n == "create_fails") return &kCreateFailsTable;
  if (n == "step_fails") return &kStepFailsTable;
  if (n == "wrong_abi") return &kWrongAbiTable;
  if (n == "no_step") return &kNoStepTable;
  return nullptr;
}

extern "C" RLSWARM_PLUGIN_EXPORT int rlswarm_test_plugin_live_envs() { return live_envs.load(); }
