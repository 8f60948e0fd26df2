#include "envs/plugin_spec.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

[[noreturn]] void Refuse(const std::string& where, const std::string& what) {
  throw InvalidArgument(where + ": the plugin's spec is invalid: " + what);
}

std::string Name(const rlswarm_env_spec& s, const std::string& where) {
  if (s.name == nullptr) Refuse(where, "name is NULL");
  // strnlen: a name without its NUL must not send us reading past it.
  const std::size_t length = strnlen(s.name, RLSWARM_PLUGIN_MAX_NAME + 1);
  if (length == 0) Refuse(where, "name is empty");
  if (length > RLSWARM_PLUGIN_MAX_NAME) {
    Refuse(where, "name is longer than " + std::to_string(RLSWARM_PLUGIN_MAX_NAME) + " bytes");
  }
  for (std::size_t i = 0; i < length; ++i) {
    const unsigned char c = s.name[i];
    if (c < 0x20 || c > 0x7e) Refuse(where, "name has a byte that is not printable ASCII");
  }
  return std::string(s.name, length);
}

DType ObservationDType(std::int32_t dtype, const std::string& where) {
  switch (dtype) {
    case RLSWARM_DTYPE_BOOL:
      return DType::kBool;
    case RLSWARM_DTYPE_UINT8:
      return DType::kUInt8;
    case RLSWARM_DTYPE_INT32:
      return DType::kInt32;
    case RLSWARM_DTYPE_INT64:
      return DType::kInt64;
    case RLSWARM_DTYPE_FLOAT32:
      return DType::kFloat32;
    case RLSWARM_DTYPE_FLOAT64:
      return DType::kFloat64;
  }
  Refuse(where, "observation_dtype " + std::to_string(dtype) +
                    " is not an rlswarm_dtype (0 bool, 1 uint8, 2 int32, 3 int64, 4 float32, "
                    "5 float64)");
}

// What bounds mean when a plugin gives none: every value the dtype holds.
void DefaultBounds(DType dtype, ArraySpec& a) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (dtype) {
    case DType::kBool:
      a.low = {0.0}, a.high = {1.0};
      return;
    case DType::kUInt8:
      a.low = {0.0}, a.high = {255.0};
      return;
    case DType::kInt32:
      a.low = {static_cast<double>(std::numeric_limits<std::int32_t>::min())};
      a.high = {static_cast<double>(std::numeric_limits<std::int32_t>::max())};
      return;
    case DType::kInt64:
      a.low = {static_cast<double>(std::numeric_limits<std::int64_t>::min())};
      a.high = {static_cast<double>(std::numeric_limits<std::int64_t>::max())};
      return;
    case DType::kFloat32:
    case DType::kFloat64:
      a.low = {-kInf}, a.high = {kInf};
      return;
  }
}

ArraySpec Observation(const rlswarm_env_spec& s, const std::string& where) {
  ArraySpec a;
  a.dtype = ObservationDType(s.observation_dtype, where);
  if (s.observation_rank < 1 || s.observation_rank > RLSWARM_PLUGIN_MAX_DIMS) {
    Refuse(where, "observation_rank " + std::to_string(s.observation_rank) + " is not in 1.." +
                      std::to_string(RLSWARM_PLUGIN_MAX_DIMS));
  }
  // Dimension by dimension against the byte limit, so that the product
  // cannot overflow.
  const auto element_bytes = static_cast<std::int64_t>(DTypeSize(a.dtype));
  std::int64_t elements = 1;
  for (std::int32_t d = 0; d < s.observation_rank; ++d) {
    const std::int64_t n = s.observation_shape[d];
    if (n <= 0) {
      Refuse(where, "observation_shape[" + std::to_string(d) + "] is " + std::to_string(n) +
                        ", must be > 0");
    }
    if (n > kMaxPluginObservationBytes / element_bytes / elements) {
      Refuse(where, "the observation is larger than " + std::to_string(kMaxPluginObservationBytes) +
                        " bytes");
    }
    elements *= n;
    a.shape.push_back(n);
  }

  const bool has_low = s.observation_low != nullptr, has_high = s.observation_high != nullptr;
  if (has_low != has_high) Refuse(where, "observation_low and observation_high: one is NULL");
  if (!has_low) {
    DefaultBounds(a.dtype, a);
    return a;
  }
  const std::int64_t count = s.observation_bounds_count;
  if (count != 1 && count != elements) {
    Refuse(where, "observation_bounds_count is " + std::to_string(count) + ", must be 1 or " +
                      std::to_string(elements) + " (one per element)");
  }
  a.low.assign(s.observation_low, s.observation_low + count);
  a.high.assign(s.observation_high, s.observation_high + count);
  for (std::int64_t i = 0; i < count; ++i) {
    if (std::isnan(a.low[i]) || std::isnan(a.high[i]) || a.low[i] > a.high[i]) {
      Refuse(where, "observation bound " + std::to_string(i) + " is [" + std::to_string(a.low[i]) +
                        ", " + std::to_string(a.high[i]) + "], must be low <= high, no NaN");
    }
  }
  return a;
}

ActionSpec Action(const rlswarm_env_spec& s, const std::string& where) {
  ActionSpec a;
  if (s.num_actions < 0) {
    Refuse(where, "num_actions is " + std::to_string(s.num_actions) + ", must be >= 0");
  }
  if (s.num_actions > 0) {
    if (s.action_dims != 0) {
      Refuse(where, "both num_actions (discrete) and action_dims (continuous) are set");
    }
    a.kind = ActionKind::kDiscrete;
    a.num_actions = s.num_actions;
    a.array = {{}, DType::kInt64, {0.0}, {static_cast<double>(s.num_actions - 1)}};
    return a;
  }
  if (s.action_dims == 0) {
    Refuse(where, "no actions: set num_actions (discrete) or action_dims (continuous)");
  }
  if (s.action_dims < 0 || s.action_dims > RLSWARM_PLUGIN_MAX_ACTION_DIMS) {
    Refuse(where, "action_dims " + std::to_string(s.action_dims) + " is not in 1.." +
                      std::to_string(RLSWARM_PLUGIN_MAX_ACTION_DIMS));
  }
  if (s.action_low == nullptr || s.action_high == nullptr) {
    Refuse(where, "continuous actions need action_low and action_high");
  }
  a.kind = ActionKind::kContinuous;
  a.array.shape = {s.action_dims};
  a.array.dtype = DType::kFloat32;
  a.array.low.assign(s.action_low, s.action_low + s.action_dims);
  a.array.high.assign(s.action_high, s.action_high + s.action_dims);
  for (std::int32_t i = 0; i < s.action_dims; ++i) {
    const double low = a.array.low[i], high = a.array.high[i];
    // Finite and ordered: a policy scales its output into [low, high].
    if (!std::isfinite(low) || !std::isfinite(high) || !(low < high)) {
      Refuse(where, "action bound " + std::to_string(i) + " is [" + std::to_string(low) + ", " +
                        std::to_string(high) + "], must be finite with low < high");
    }
  }
  return a;
}

}  // namespace

EnvSpec ToEnvSpec(const rlswarm_env_spec& plugin_spec, const std::string& where) {
  EnvSpec spec;
  spec.name = Name(plugin_spec, where);
  spec.observation = Observation(plugin_spec, where);
  spec.action = Action(plugin_spec, where);
  if (plugin_spec.max_episode_steps < 0) {
    Refuse(where, "max_episode_steps is " + std::to_string(plugin_spec.max_episode_steps) +
                      ", must be >= 0 (0 = no limit)");
  }
  spec.max_episode_steps = plugin_spec.max_episode_steps;
  spec.Validate();  // what EnvSpec itself requires, should it ever ask for more
  return spec;
}

}  // namespace rlswarm::envs
