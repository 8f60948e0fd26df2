#pragma once

// Activation checkpointing of one sharding unit (learner.activation_checkpointing),
// the C++ counterpart of torch.utils.checkpoint, which LibTorch does not have.
//
// CheckpointedForward(run, input, params) runs `run` under no-grad, so the
// unit's intermediate activations are freed as soon as the forward moves on;
// the output gets one autograd node whose edges lead to `input` and
// `params`. That node saves only `input` and `params` (for a sharded unit:
// its gathered flat buffer, whose storage full_shard frees and re-gathers
// exactly as without checkpointing, gathered_units.h). In backward it runs
// `run` again with grad mode on, on detached copies of what it saved, and
// backprops the output's gradient through that recomputation (a reentrant
// torch::autograd::grad); the gradients it returns flow on along the edges
// as the unit's own graph would have sent them: to the previous unit, and to
// ReduceScatterGrad (sharded) or the parameter leaves (direct path).
//
// Cost: one more forward of the unit in backward; memory: one unit's
// activations at a time instead of every unit's, plus each unit's input.
//
// `run` must compute the same thing twice: the model's layers are
// deterministic (no dropout), so no RNG state is saved and restored. `run`
// is held by the graph until backward; whatever it refers to must outlive it
// (ShardedModel: the model outlives backward, sharded_model.h). Double
// backward through a checkpointed unit is unsupported (as for the model).
//
// Not thread-safe beyond what autograd guarantees: backward runs the node on
// the engine's thread for the device.

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace rlswarm::learner {

// One unit's forward: the unit's input and its parameters -> its output.
using UnitForward =
    std::function<at::Tensor(const at::Tensor& input, const std::vector<at::Tensor>& params)>;

// run(input, params), recomputed in backward instead of saved (see above).
// Without grad mode, or when neither input nor params require grad, it is
// run(input, params) itself. `name` names the node (the unit).
at::Tensor CheckpointedForward(UnitForward run, const at::Tensor& input,
                               const std::vector<at::Tensor>& params, const std::string& name);

}  // namespace rlswarm::learner
