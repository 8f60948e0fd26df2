#pragma once

// The learner's copies between host and device, none of which stalls the
// training thread on CUDA.
//
// BatchStager: sampled batches on the learner's device, staged one batch ahead of the
// update that uses them (the learner's prefetch thread stages batch k + 1
// while update k trains).
//
//   CPU:  the fields are views of the sampled bytes (at::from_blob): no copy.
//   CUDA: each field is copied into pinned host memory and sent to the device
//         asynchronously (non_blocking) on a copy stream of its own, after
//         which a CUDA event is recorded. MakeReady() on the training thread
//         makes the current (compute) stream wait for that event and records
//         the compute stream on the fields' memory, so the caching allocator
//         does not hand it to the next copy while compute still reads it: no
//         host synchronisation anywhere.
//
// Thread-safety: Stage() may run on any thread, one call at a time per
// StagedBatch; MakeReady() and the use of a StagedBatch belong to the
// training thread.

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "replay/table_types.h"

namespace rlswarm::learner {

struct StagedBatch {
  // Owns the sampled bytes (the CPU fields are views of them) and carries
  // the keys and versions the learner sends back to replay.
  replay::SampledBatch host;
  // Field name -> tensor on the learner's device, the sampled dtype and
  // shape [B, ...].
  std::vector<std::pair<std::string, at::Tensor>> fields;
  at::Tensor weights;               // IS weights [B] (float64), or undefined
  std::shared_ptr<void> copy_done;  // the copy's CUDA event; null on the CPU

  // Throws InvalidArgument naming the field when the batch has none of that
  // name.
  const at::Tensor& Field(const std::string& name) const;
};

class BatchStager {
 public:
  explicit BatchStager(at::Device device);
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // Moves `batch` to the device (see above). Does not wait for the copy.
  // Throws InvalidArgument on a field of an unknown dtype.
  StagedBatch Stage(replay::SampledBatch batch) const;
  // Orders the current stream after the batch's copy (a no-op on the CPU).
  void MakeReady(const StagedBatch& batch) const;

  const at::Device& device() const { return device_; }

 private:
  struct CudaState;  // the copy stream (CUDA builds only)
  at::Device device_;
  std::unique_ptr<CudaState> cuda_;
};

// A snapshot of a tensor in host memory, taken without waiting for the
// device: on the CPU a plain copy; on CUDA one asynchronous device-to-host
// copy into pinned memory, ordered after the work queued so far on the
// current stream. Wait() (any thread) blocks until the copy has landed.
struct HostCopy {
  at::Tensor host;
  std::shared_ptr<void> done;  // the copy's CUDA event; null on the CPU
  void Wait() const;
};
HostCopy CopyToHostAsync(const at::Tensor& tensor);

}  // namespace rlswarm::learner
