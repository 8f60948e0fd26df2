// rlswarm._core: the C++ environments for Python. The Python package
// (rlswarm/__init__.py) builds Gymnasium's API on top of it; nothing here
// imports Gymnasium.
//
// Errors: every rlswarm::Error crossing into Python becomes the class of
// rlswarm.errors with the same status code (InvalidArgument is also a
// ValueError, NotFound a LookupError, ...), so Python code catches the types
// the C++ documentation names.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>

#include "common/errors.h"
#include "common/logging.h"
#include "envs/registry.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

void TranslateError(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    // Looked up per error, not cached: an error is rare, and a cached class
    // object would outlive the interpreter at shutdown.
    nb::object by_code = nb::module_::import_("rlswarm.errors").attr("_BY_CODE");
    nb::object cls = by_code.attr("get")(static_cast<int>(e.code()));
    PyErr_SetString(cls.ptr(), e.what());
  }
}

}  // namespace

nb::dlpack::dtype ToDLPack(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return nb::dtype<bool>();
    case DType::kUInt8:
      return nb::dtype<std::uint8_t>();
    case DType::kInt32:
      return nb::dtype<std::int32_t>();
    case DType::kInt64:
      return nb::dtype<std::int64_t>();
    case DType::kFloat32:
      return nb::dtype<float>();
    case DType::kFloat64:
      return nb::dtype<double>();
  }
  throw Internal("unknown DType");
}

envs::EnvOptions MakeEnvOptions(std::optional<std::int64_t> max_episode_steps,
                                std::optional<double> sticky_action_prob,
                                std::optional<bool> difficulty_ramping,
                                std::optional<bool> minimal_action_set) {
  envs::EnvOptions options;
  options.max_episode_steps = max_episode_steps;
  options.sticky_action_prob = sticky_action_prob;
  options.difficulty_ramping = difficulty_ramping;
  options.minimal_action_set = minimal_action_set;
  options.Validate();
  return options;
}

namespace {

nb::list Bounds(const envs::ArraySpec& a, bool high) {
  nb::list out;
  for (std::int64_t i = 0; i < a.NumElements(); ++i) out.append(high ? a.High(i) : a.Low(i));
  return out;
}

nb::tuple Shape(const envs::ArraySpec& a) {
  nb::list out;
  for (std::int64_t d : a.shape) out.append(d);
  return nb::tuple(out);
}

}  // namespace

nb::dict SpecToDict(const envs::EnvSpec& spec) {
  nb::dict d;
  d["name"] = spec.name;
  d["observation_shape"] = Shape(spec.observation);
  d["observation_dtype"] = std::string(DTypeName(spec.observation.dtype));
  d["observation_low"] = Bounds(spec.observation, false);
  d["observation_high"] = Bounds(spec.observation, true);
  const bool discrete = spec.action.kind == envs::ActionKind::kDiscrete;
  d["action_kind"] = discrete ? "discrete" : "continuous";
  d["num_actions"] = spec.action.num_actions;
  d["action_shape"] = discrete ? nb::tuple() : Shape(spec.action.array);
  d["action_low"] = discrete ? nb::list() : Bounds(spec.action.array, false);
  d["action_high"] = discrete ? nb::list() : Bounds(spec.action.array, true);
  d["max_episode_steps"] = spec.max_episode_steps;
  return d;
}

}  // namespace rlswarm::python

NB_MODULE(_core, m) {
  using namespace rlswarm::python;
  m.doc() = "The C++ environments of rlswarm (use rlswarm.make_vec or Gymnasium's registry).";
  nb::register_exception_translator(&TranslateError);
  // The C++ libraries log to stderr; in a Python program only warnings and
  // errors are worth the noise unless asked for (set_log_level).
  rlswarm::InitLogging("python", spdlog::level::warn);
  m.def(
      "set_log_level",
      [](const std::string& level) { spdlog::set_level(rlswarm::ParseLogLevel(level)); },
      nb::arg("level"),
      "Level of the C++ libraries' stderr log: trace, debug, info, warn (default), error, "
      "critical or off.");
  m.def("env_names", &rlswarm::envs::EnvNames, "Every built-in env name, sorted.");
  BindEnv(m);
  BindVectorEnv(m);
  BindReplay(m);
  BindNStep(m);
  BindBroadcast(m);
}
