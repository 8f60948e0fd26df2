#pragma once

// Test-only: counts the bytes every LibTorch CPU tensor allocates, so that a
// test can state how much memory autograd's saved tensors hold (the
// activations) without reading the process's resident size, which the heap
// keeps high after earlier tests. Installed once per process as the CPU
// allocator, in front of the one it replaces, and never removed: storages
// keep a pointer to the allocator that made them (a freed and re-gathered
// unit re-allocates through it, torch_adapter.h).
//
// Counts only the installing thread's allocations made since the last
// Mark(): Gloo's threads allocate temporaries at moments that race with any
// reading of the count, and they drop their references to earlier
// collectives' tensors (allocated by this thread before the mark) whenever
// they get to it, so a plain "alive now minus alive before" moves by a few kB
// between runs. Thread-safe: the counters are atomics.

#include <cstdint>

namespace rlswarm::learner::testing {

class CpuAllocationCounter {
 public:
  // Installs the counting allocator on first use; the same object after.
  static CpuAllocationCounter& Installed();

  // Opens a new window: what was allocated before it no longer counts.
  void Mark();
  // Bytes of CPU tensor storage allocated by the installing thread since the
  // last Mark() and still alive, and the most of those alive at once.
  int64_t held_bytes() const;
  int64_t peak_bytes() const;

 private:
  CpuAllocationCounter() = default;
};

}  // namespace rlswarm::learner::testing
