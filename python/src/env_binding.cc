// rlswarm._core.Env: one C++ environment behind Gymnasium's single-env API
// (rlswarm.Env wraps it). Observations are written into arrays the caller
// allocates, so each reset and step returns fresh memory, as Gymnasium's
// checker requires of a single env.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/errors.h"
#include "envs/env.h"
#include "envs/registry.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

using Out = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;
using ContinuousAction = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

// Not thread-safe (as envs::Env): the Python wrapper is used from one thread.
class PyEnv {
 public:
  PyEnv(const std::string& name, const envs::EnvOptions& options)
      : env_(envs::MakeEnv(name, options)) {}

  const envs::EnvSpec& spec() const { return env_->spec(); }

  void Reset(std::optional<std::uint64_t> seed, Out out) { env_->Reset(seed, Bytes(out)); }

  nb::tuple StepDiscrete(std::int64_t action, Out out) {
    return Result(env_->Step(action, Bytes(out)));
  }

  nb::tuple StepContinuous(ContinuousAction action, Out out) {
    return Result(env_->Step(std::span<const float>(action.data(), action.size()), Bytes(out)));
  }

 private:
  static std::span<std::byte> Bytes(Out& out) {
    return {static_cast<std::byte*>(out.data()), out.nbytes()};
  }
  static nb::tuple Result(const envs::StepResult& r) {
    return nb::make_tuple(static_cast<double>(r.reward), r.terminated, r.truncated);
  }

  std::unique_ptr<envs::Env> env_;
};

}  // namespace

void BindEnv(nb::module_& m) {
  nb::class_<PyEnv>(m, "Env", "One built-in environment (see rlswarm.Env for the Gymnasium API).")
      .def(
          "__init__",
          [](PyEnv* self, const std::string& name, std::optional<std::int64_t> max_episode_steps,
             std::optional<double> sticky_action_prob, std::optional<bool> difficulty_ramping,
             std::optional<bool> minimal_action_set) {
            new (self) PyEnv(name, MakeEnvOptions(max_episode_steps, sticky_action_prob,
                                                  difficulty_ramping, minimal_action_set));
          },
          nb::arg("name"), nb::kw_only(), nb::arg("max_episode_steps") = nb::none(),
          nb::arg("sticky_action_prob") = nb::none(), nb::arg("difficulty_ramping") = nb::none(),
          nb::arg("minimal_action_set") = nb::none())
      .def(
          "spec", [](const PyEnv& e) { return SpecToDict(e.spec()); },
          "The env spec as a dict of plain values.")
      .def("reset", &PyEnv::Reset, nb::arg("seed").none(), nb::arg("out"),
           "Starts an episode (reseeding first if seed is not None) and writes its first "
           "observation into out.")
      .def("step_discrete", &PyEnv::StepDiscrete, nb::arg("action"), nb::arg("out"),
           "Steps with a discrete action, writes the observation into out and returns "
           "(reward, terminated, truncated).")
      .def("step_continuous", &PyEnv::StepContinuous, nb::arg("action"), nb::arg("out"),
           "Steps with a float32 action array; as step_discrete otherwise.");
}

}  // namespace rlswarm::python
