#include "learner/fsdp/activation_checkpoint.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

namespace rlswarm::learner {
namespace {

// The backward of a checkpointed unit. A hand-written Node (as
// ReduceScatterGrad in gathered_units.cc) so that it can hold the C++
// forward; SavedVariable keeps autograd's version check on what it saved.
// Edge 0 is the input, edges 1.. the parameters.
class CheckpointedUnitBackward : public torch::autograd::Node {
 public:
  CheckpointedUnitBackward(UnitForward run, const at::Tensor& input,
                           const std::vector<at::Tensor>& params, std::string name)
      : run_(std::move(run)), name_("rlswarm::learner::CheckpointedUnitBackward(" + name + ")") {
    saved_.emplace_back(input, /*is_output=*/false);
    for (const at::Tensor& p : params) saved_.emplace_back(p, /*is_output=*/false);
  }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    torch::autograd::variable_list out(saved_.size());
    // No gradient reached the unit's output: nothing flows on (the nodes
    // behind still run, so a reduce-scatter is still issued).
    if (grads.empty() || !grads[0].defined()) return out;
    std::vector<at::Tensor> detached;
    std::vector<at::Tensor> wanted;  // the detached copies whose gradient backward needs
    std::vector<size_t> wanted_index;
    for (size_t i = 0; i < saved_.size(); ++i) {
      at::Tensor t = saved_[i].unpack();
      at::Tensor d = t.detach();
      if (task_should_compute_output(i) && d.is_floating_point()) {
        d.requires_grad_(true);
        wanted.push_back(d);
        wanted_index.push_back(i);
      }
      detached.push_back(std::move(d));
    }
    if (wanted.empty()) return out;
    at::Tensor recomputed;
    {
      // The engine runs nodes with grad mode off; the recomputation must
      // record its graph.
      at::AutoGradMode grad_on(true);
      const std::vector<at::Tensor> params(detached.begin() + 1, detached.end());
      recomputed = run_(detached[0], params);
    }
    torch::autograd::variable_list computed =
        torch::autograd::grad({recomputed}, wanted, {grads[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t k = 0; k < wanted_index.size(); ++k) out[wanted_index[k]] = computed[k];
    return out;
  }

  std::string name() const override { return name_; }
  void release_variables() override {
    for (torch::autograd::SavedVariable& s : saved_) s.reset_data();
    run_ = nullptr;
  }

 private:
  UnitForward run_;
  std::string name_;
  std::vector<torch::autograd::SavedVariable> saved_;
};

}  // namespace

at::Tensor CheckpointedForward(UnitForward run, const at::Tensor& input,
                               const std::vector<at::Tensor>& params, const std::string& name) {
  bool needs_grad = input.requires_grad();
  for (const at::Tensor& p : params) needs_grad = needs_grad || p.requires_grad();
  if (!at::GradMode::is_enabled() || !needs_grad) return run(input, params);
  at::Tensor output;
  {
    at::NoGradGuard no_grad;
    output = run(input, params);
  }
  // An output that aliases the input (a unit of views only) becomes its own
  // tensor: a view made under no-grad cannot take a grad_fn, and the input
  // must keep its own.
  if (output.is_view() || output.is_alias_of(input)) output = output.clone();
  auto node = std::shared_ptr<CheckpointedUnitBackward>(
      new CheckpointedUnitBackward(std::move(run), input, params, name),
      torch::autograd::deleteNode);
  std::vector<at::Tensor> inputs{input};
  inputs.insert(inputs.end(), params.begin(), params.end());
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  torch::autograd::create_gradient_edge(output, node);
  return output;
}

}  // namespace rlswarm::learner
