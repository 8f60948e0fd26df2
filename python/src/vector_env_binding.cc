// rlswarm._core.VectorEnv: envs::VectorEnv with its output buffers as NumPy
// arrays that view the C++ memory (no copy, read-only), and Step and Reset
// run with the GIL released. rlswarm.VectorEnv (Python) adds Gymnasium's API.
//
// Data path per step: a C-contiguous int64 (discrete) or float32 (continuous)
// action array -> VectorEnv::Step on this thread or its worker pool, GIL
// released -> the same observation/reward/flag buffers, overwritten in place.
// The views stay valid (they keep this object alive) but their contents
// change at every Step and Reset.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/errors.h"
#include "envs/vector_env.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

using Actions = nb::ndarray<nb::ro, nb::device::cpu>;
using View = nb::ndarray<nb::numpy, nb::ro>;

std::string ShapeString(const Actions& a) {
  std::string s = "(";
  for (std::size_t d = 0; d < a.ndim(); ++d) s += std::to_string(a.shape(d)) + ",";
  return s + ")";
}

// Not thread-safe, as envs::VectorEnv: a second thread entering Step or Reset
// while the first runs (possible because the GIL is released) gets a
// FailedPrecondition instead of a data race.
class PyVectorEnv {
 public:
  PyVectorEnv(const std::string& name, const envs::VectorEnvOptions& options)
      : env_(name, options) {
    const auto& obs = env_.spec().observation.shape;
    obs_shape_.push_back(static_cast<std::size_t>(env_.num_envs()));
    for (std::int64_t d : obs) obs_shape_.push_back(static_cast<std::size_t>(d));
    const auto& act = env_.spec().action;
    action_shape_.push_back(env_.num_envs());
    if (act.kind == envs::ActionKind::kContinuous) {
      for (std::int64_t d : act.array.shape) action_shape_.push_back(d);
    }
  }

  const envs::VectorEnv& env() const { return env_; }

  void Reset(std::uint64_t seed) {
    InUse in_use(*this);
    nb::gil_scoped_release release;
    env_.Reset(seed);
  }

  // Returns how many envs ended an episode on this step.
  std::int64_t Step(const Actions& actions) {
    const bool discrete = env_.spec().action.kind == envs::ActionKind::kDiscrete;
    CheckActions(actions, discrete);
    InUse in_use(*this);
    {
      nb::gil_scoped_release release;
      if (discrete) {
        env_.Step(std::span(static_cast<const std::int64_t*>(actions.data()), actions.size()));
      } else {
        env_.Step(std::span(static_cast<const float*>(actions.data()), actions.size()));
      }
    }
    std::int64_t done = 0;
    for (std::int64_t i = 0; i < env_.num_envs(); ++i) done += env_.done(i);
    return done;
  }

  nb::object Observations(nb::handle self) const {
    return ObservationView(env_.observations(), self);
  }
  nb::object FinalObservations(nb::handle self) const {
    return ObservationView(env_.final_observations(), self);
  }
  nb::object Rewards(nb::handle self) const { return Column(env_.rewards(), self); }
  nb::object Terminated(nb::handle self) const {
    // uint8 0/1 has bool's layout (one byte, 0 or 1), as NumPy's bool.
    return Column(reinterpret_cast<const bool*>(env_.terminated()), self);
  }
  nb::object Truncated(nb::handle self) const {
    return Column(reinterpret_cast<const bool*>(env_.truncated()), self);
  }

 private:
  class InUse {
   public:
    explicit InUse(PyVectorEnv& v) : v_(v) {
      if (v_.in_use_.exchange(true)) {
        throw FailedPrecondition(
            "rlswarm.VectorEnv is not thread-safe: step or reset was called "
            "from two threads at once");
      }
    }
    ~InUse() { v_.in_use_.store(false); }

   private:
    PyVectorEnv& v_;
  };

  void CheckActions(const Actions& a, bool discrete) const {
    const nb::dlpack::dtype want = discrete ? nb::dtype<std::int64_t>() : nb::dtype<float>();
    const char* want_name = discrete ? "int64" : "float32";
    const std::string& name = env_.spec().name;
    if (a.dtype() != want) {
      throw InvalidArgument(name + ": actions must be a " + std::string(want_name) + " array");
    }
    bool shape_ok = a.ndim() == action_shape_.size();
    for (std::size_t d = 0; shape_ok && d < a.ndim(); ++d) {
      shape_ok = static_cast<std::int64_t>(a.shape(d)) == action_shape_[d];
    }
    if (!shape_ok) {
      std::string want_shape = "(";
      for (std::int64_t d : action_shape_) want_shape += std::to_string(d) + ",";
      throw InvalidArgument(name + ": actions of shape " + ShapeString(a) + ", expected " +
                            want_shape + ")");
    }
    std::int64_t expected_stride = 1;
    for (std::size_t d = a.ndim(); d-- > 0;) {
      if (a.shape(d) > 1 && a.stride(d) != expected_stride) {
        throw InvalidArgument(name + ": actions must be C-contiguous");
      }
      expected_stride *= static_cast<std::int64_t>(a.shape(d));
    }
  }

  nb::object ObservationView(const std::byte* data, nb::handle owner) const {
    return View(data, obs_shape_.size(), obs_shape_.data(), owner, nullptr,
                ToDLPack(env_.spec().observation.dtype))
        .cast();
  }

  template <typename T>
  nb::object Column(const T* data, nb::handle owner) const {
    const std::size_t n = static_cast<std::size_t>(env_.num_envs());
    return View(data, 1, &n, owner, nullptr, nb::dtype<T>()).cast();
  }

  envs::VectorEnv env_;
  std::vector<std::size_t> obs_shape_;
  std::vector<std::int64_t> action_shape_;
  std::atomic<bool> in_use_{false};
};

}  // namespace

void BindVectorEnv(nb::module_& m) {
  nb::class_<PyVectorEnv>(m, "VectorEnv",
                          "N built-in environments stepped as a batch (see rlswarm.make_vec).")
      .def(
          "__init__",
          [](PyVectorEnv* self, const std::string& name, std::int64_t num_envs, int num_threads,
             const std::string& autoreset_mode, std::optional<std::int64_t> max_episode_steps,
             std::optional<double> sticky_action_prob, std::optional<bool> difficulty_ramping,
             std::optional<bool> minimal_action_set) {
            envs::VectorEnvOptions options;
            options.num_envs = num_envs;
            options.num_threads = num_threads;
            if (autoreset_mode == "same_step") {
              options.autoreset = envs::AutoResetMode::kSameStep;
            } else if (autoreset_mode == "next_step") {
              options.autoreset = envs::AutoResetMode::kNextStep;
            } else {
              throw InvalidArgument("autoreset_mode must be 'same_step' or 'next_step', got '" +
                                    autoreset_mode + "'");
            }
            options.env = MakeEnvOptions(max_episode_steps, sticky_action_prob, difficulty_ramping,
                                         minimal_action_set);
            new (self) PyVectorEnv(name, options);
          },
          nb::arg("name"), nb::arg("num_envs"), nb::kw_only(), nb::arg("num_threads") = 1,
          nb::arg("autoreset_mode") = "same_step", nb::arg("max_episode_steps") = nb::none(),
          nb::arg("sticky_action_prob") = nb::none(), nb::arg("difficulty_ramping") = nb::none(),
          nb::arg("minimal_action_set") = nb::none())
      .def_prop_ro("num_envs", [](const PyVectorEnv& v) { return v.env().num_envs(); })
      .def(
          "spec", [](const PyVectorEnv& v) { return SpecToDict(v.env().spec()); },
          "The env spec as a dict of plain values.")
      .def("reset", &PyVectorEnv::Reset, nb::arg("seed"),
           "Resets every env (env i seeded from (seed, i)); releases the GIL.")
      .def("step", &PyVectorEnv::Step, nb::arg("actions"),
           "Steps every env with a C-contiguous int64 (num_envs,) or float32 (num_envs, "
           "*action_shape) array; releases the GIL; returns how many episodes ended.")
      .def(
          "observations",
          [](nb::handle self) { return nb::cast<PyVectorEnv&>(self).Observations(self); },
          "Read-only view of the observations, (num_envs, *obs_shape).")
      .def(
          "final_observations",
          [](nb::handle self) { return nb::cast<PyVectorEnv&>(self).FinalObservations(self); },
          "Read-only view of the last observation of each env's latest ended episode.")
      .def(
          "rewards", [](nb::handle self) { return nb::cast<PyVectorEnv&>(self).Rewards(self); },
          "Read-only float32 view of the rewards of the last step.")
      .def(
          "terminated",
          [](nb::handle self) { return nb::cast<PyVectorEnv&>(self).Terminated(self); },
          "Read-only bool view of the terminated flags of the last step.")
      .def(
          "truncated", [](nb::handle self) { return nb::cast<PyVectorEnv&>(self).Truncated(self); },
          "Read-only bool view of the truncated flags of the last step.")
      .def(
          "buffer_address",
          [](const PyVectorEnv& v) {
            return reinterpret_cast<std::uintptr_t>(v.env().observations());
          },
          "Address of the C++ observation buffer (tests check the views share it).");
}

}  // namespace rlswarm::python
