#pragma once

// A one-rank c10d group for unit tests of what the learner decides on its
// own side of a collective: it carries a real backend's name ("nccl",
// "gloo"), runs every collective at once on the calling thread (the sum or
// gather over one rank is a copy) and records which entry point was
// called, into which buffer, and how each Work was waited on. With it the
// NCCL code path of Communicator and ShardedModel (flat all-gather, waits
// without a host timeout, device timings) runs on a machine without a GPU.
//
// Like NCCL's, a FakeWork's future is complete when the collective is
// issued. A FakeWork completes at once unless the group holds completions
// (hold_completions), until CompleteAll(). Durations (LibTorch 2.x's
// Work::getDuration) are `duration_ms` each.
//
// Not thread-safe: one test thread drives a FakeGroup.

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "learner/dist/torch_adapter.h"

namespace rlswarm::learner::testing {

struct FakeGroupLog {
  std::vector<std::string> calls;  // "allgather", "_allgather_base", ...
  // The timeout each Work::wait got (::kNoTimeout: none).
  std::vector<std::chrono::milliseconds> wait_timeouts;
  // The data pointer of each flat all-gather's output.
  std::vector<const void*> gather_outputs;
  // Completion switches of the Works issued while completions are held.
  std::vector<std::shared_ptr<bool>> held;
};

class FakeWork : public c10d::Work {
 public:
  FakeWork(std::shared_ptr<FakeGroupLog> log, std::shared_ptr<bool> completed, float duration_ms,
           std::vector<at::Tensor> outputs)
      : log_(std::move(log)), completed_(std::move(completed)), duration_ms_(duration_ms) {
    future_ =
        c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    future_->markCompleted(c10::IValue(std::move(outputs)));
  }
  bool isCompleted() override { return *completed_; }
  bool wait(std::chrono::milliseconds timeout) override {
    log_->wait_timeouts.push_back(timeout);
    return true;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
#if TORCH_VERSION_MAJOR >= 2
  float getDuration() const override { return duration_ms_; }
#endif

 private:
  std::shared_ptr<FakeGroupLog> log_;
  std::shared_ptr<bool> completed_;
  float duration_ms_ = 0;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class FakeGroup : public CollectiveGroup {
 public:
  explicit FakeGroup(std::string name, float duration_ms = 1.0f)
      : CollectiveGroup(/*rank=*/0, /*size=*/1),
        name_(std::move(name)),
        duration_ms_(duration_ms) {}

  const std::string getBackendName() const override { return name_; }
  const std::shared_ptr<FakeGroupLog>& log() const { return log_; }
  void hold_completions(bool on) { hold_ = on; }
  void CompleteAll() {
    for (auto& done : log_->held) *done = true;
    log_->held.clear();
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& = {}) override {
    outputs.at(0).at(0).copy_(inputs.at(0));
    return Done("allgather", {outputs[0][0]});
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& = {}) override {
    log_->gather_outputs.push_back(output.data_ptr());
    output.copy_(input);
    return Done("_allgather_base", {output});
  }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& = {}) override {
    return Done("allreduce", tensors);
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& = {}) override {
    output.copy_(input);
    return Done("_reduce_scatter_base", {output});
  }
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>&, std::vector<int64_t>&,
                                               const c10d::AllToAllOptions& = {}) override {
    output.copy_(input);
    return Done("alltoall_base", {output});
  }

 private:
  c10::intrusive_ptr<c10d::Work> Done(const char* call, std::vector<at::Tensor> outputs) {
    log_->calls.push_back(call);
    auto completed = std::make_shared<bool>(!hold_);
    if (hold_) log_->held.push_back(completed);
    return c10::make_intrusive<FakeWork>(log_, std::move(completed), duration_ms_,
                                         std::move(outputs));
  }

  std::string name_;
  float duration_ms_ = 1.0f;
  bool hold_ = false;
  std::shared_ptr<FakeGroupLog> log_ = std::make_shared<FakeGroupLog>();
};

}  // namespace rlswarm::learner::testing
