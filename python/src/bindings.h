#pragma once

// The parts of the rlswarm._core extension module, one per bound class.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "envs/registry.h"

namespace rlswarm::python {

// Registers rlswarm._core.Env (one environment, Gymnasium's single-env API).
void BindEnv(nanobind::module_& m);
// Registers rlswarm._core.VectorEnv (envs::VectorEnv with NumPy views).
void BindVectorEnv(nanobind::module_& m);
// Registers rlswarm._core.ReplayServer, ReplayWriter, ReplaySampler and
// generate_key_pair (replay/service/ and rpc/security.h).
void BindReplay(nanobind::module_& m);
// Registers rlswarm._core.NStepAccumulator (replay/service/n_step.h).
void BindNStep(nanobind::module_& m);
// Registers rlswarm._core.BroadcastPublisher (rpc/broadcast.h).
void BindBroadcast(nanobind::module_& m);

// A 1-D NumPy array that owns the vector's memory (moved, not copied).
template <typename T>
nanobind::object ToNumPy(std::vector<T> v) {
  auto* owned = new std::vector<T>(std::move(v));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nanobind::ndarray<nanobind::numpy, T>(owned->data(), {owned->size()}, owner).cast();
}

// The NumPy (DLPack) element type of a DType.
nanobind::dlpack::dtype ToDLPack(DType dtype);

// The env options of envs/registry.h from keyword arguments; None leaves an
// option at the env's default.
envs::EnvOptions MakeEnvOptions(std::optional<std::int64_t> max_episode_steps,
                                std::optional<double> sticky_action_prob,
                                std::optional<bool> difficulty_ramping,
                                std::optional<bool> minimal_action_set);

// The env spec as a dict of plain Python values (the Python side turns it
// into Gymnasium spaces): observation_shape, observation_dtype,
// observation_low, observation_high, action_kind ("discrete" or
// "continuous"), num_actions, action_shape, action_low, action_high,
// max_episode_steps, name.
nanobind::dict SpecToDict(const envs::EnvSpec& spec);

}  // namespace rlswarm::python
