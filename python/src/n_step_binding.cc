// rlswarm._core.NStepAccumulator: the actors' n-step accumulator
// (replay/service/n_step.h) from Python, so a Python actor writes the same
// transitions with the same initial priorities as `rlswarm actor`.
// rlswarm.replay.NStepWriter (Python) wraps it with a Writer.
//
// The accumulator moves bytes: observations and actions arrive as
// C-contiguous arrays of any dtype and are copied by their bytes (the Python
// side converts them to the replay signature's dtypes first); ready columns
// come back as NumPy arrays that own the moved C++ vectors (no copy), the
// byte columns as flat uint8 arrays for the Python side to view.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "python/src/bindings.h"
#include "replay/service/n_step.h"

namespace nb = nanobind;

namespace rlswarm::python {
namespace {

using Bytes = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using Floats = nb::ndarray<nb::ro, float, nb::c_contig, nb::device::cpu>;
using Flags = nb::ndarray<nb::ro, std::uint8_t, nb::c_contig, nb::device::cpu>;

std::span<const std::byte> AsBytes(const Bytes& a) {
  return {static_cast<const std::byte*>(a.data()), a.nbytes()};
}
std::span<const float> AsFloats(const Floats& a) { return {a.data(), a.size()}; }
std::span<const std::uint8_t> AsFlags(const Flags& a) { return {a.data(), a.size()}; }

// A flat uint8 array that owns the vector's bytes (moved, not copied).
nb::object ByteArray(std::vector<std::byte> v) {
  auto* owned = new std::vector<std::byte>(std::move(v));
  nb::capsule owner(owned,
                    [](void* p) noexcept { delete static_cast<std::vector<std::byte>*>(p); });
  return nb::ndarray<nb::numpy, std::uint8_t>(reinterpret_cast<std::uint8_t*>(owned->data()),
                                              {owned->size()}, owner)
      .cast();
}

// Not thread safe (as NStepAccumulator): one Python thread owns it. Every
// call is short and keeps the GIL.
class PyNStepAccumulator {
 public:
  PyNStepAccumulator(std::int64_t num_envs, std::size_t obs_bytes, std::size_t action_bytes, int n,
                     double gamma)
      : acc_(replay::NStepOptions{n, gamma}, num_envs, obs_bytes, action_bytes) {}

  void Observe(const Bytes& observations, const Bytes& actions, const Floats& q_taken,
               const Floats& rewards, const Flags& terminated, const Flags& truncated,
               const Bytes& next_observations, const Bytes& final_observations,
               std::int64_t policy_version) {
    acc_.Observe({AsBytes(observations), AsBytes(actions), AsFloats(q_taken), AsFloats(rewards),
                  AsFlags(terminated), AsFlags(truncated), AsBytes(next_observations),
                  AsBytes(final_observations), policy_version});
  }
  void SetCurrentValues(const Floats& values) { acc_.SetCurrentValues(AsFloats(values)); }
  void SetFinalValues(const Floats& values) { acc_.SetFinalValues(AsFloats(values)); }
  std::vector<std::int64_t> TruncatedEnvs() const { return acc_.truncated_envs(); }
  std::int64_t Waiting() const { return acc_.waiting(); }

  nb::dict TakeReady() {
    replay::TransitionColumns t = acc_.TakeReady();
    nb::dict d;
    d["observation"] = ByteArray(std::move(t.observation));
    d["action"] = ByteArray(std::move(t.action));
    d["reward"] = ToNumPy(std::move(t.reward));
    d["discount"] = ToNumPy(std::move(t.discount));
    d["next_observation"] = ByteArray(std::move(t.next_observation));
    d["priority"] = ToNumPy(std::move(t.priority));
    d["policy_version"] = ToNumPy(std::move(t.policy_version));
    return d;
  }

 private:
  replay::NStepAccumulator acc_;
};

}  // namespace

void BindNStep(nb::module_& m) {
  nb::class_<PyNStepAccumulator>(
      m, "NStepAccumulator",
      "n-step transitions with Ape-X initial priorities for M envs (replay/service/n_step.h).")
      .def(nb::init<std::int64_t, std::size_t, std::size_t, int, double>(), nb::arg("num_envs"),
           nb::arg("obs_bytes"), nb::arg("action_bytes"), nb::arg("n"), nb::arg("gamma"))
      .def("observe", &PyNStepAccumulator::Observe, nb::arg("observations"), nb::arg("actions"),
           nb::arg("q_taken"), nb::arg("rewards"), nb::arg("terminated"), nb::arg("truncated"),
           nb::arg("next_observations"), nb::arg("final_observations"), nb::arg("policy_version"),
           "Records one step of every env; raises FailedPrecondition while transitions of the "
           "previous step wait for their values.")
      .def("set_current_values", &PyNStepAccumulator::SetCurrentValues, nb::arg("values"),
           "V of every env's current observation, [M].")
      .def("set_final_values", &PyNStepAccumulator::SetFinalValues, nb::arg("values"),
           "V of the final observation of each env in truncated_envs.")
      .def_prop_ro("truncated_envs", &PyNStepAccumulator::TruncatedEnvs,
                   "The envs truncated in the last observe, in order.")
      .def_prop_ro("waiting", &PyNStepAccumulator::Waiting,
                   "Transitions emitted but waiting for a value.")
      .def("take_ready", &PyNStepAccumulator::TakeReady,
           "Moves the ready transitions out as columns (byte columns flat uint8).");
}

}  // namespace rlswarm::python
