#include "learner/testing/counting_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace rlswarm::learner::testing {
namespace {

// The window opened by the last Mark(): allocations carry the window they
// were made in, and only frees of this window's allocations are subtracted.
std::atomic<int64_t> g_window{0};
std::atomic<int64_t> g_current{0};
// Only the thread that installed the counter (the training thread, which
// runs forward and, on the CPU, backward) is counted: Gloo's worker threads
// allocate and free their own temporaries (an all-gather's flat output) at
// moments that race with any reading of the count.
std::thread::id g_counted_thread;
std::atomic<int64_t> g_peak{0};

// What a counted allocation carries to its deleter: the inner allocation
// (freed with it) and its size.
struct Counted {
  c10::DataPtr inner;
  int64_t bytes = 0;
  int64_t window = 0;
};

void DeleteCounted(void* context) {
  auto* counted = static_cast<Counted*>(context);
  if (counted->window == g_window.load()) g_current.fetch_sub(counted->bytes);
  delete counted;  // frees the inner allocation through its own deleter
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}

#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif

 private:
  c10::DataPtr Allocate(size_t n) const {
    const int64_t bytes =
        std::this_thread::get_id() == g_counted_thread ? static_cast<int64_t>(n) : 0;
    auto* counted = new Counted{inner_->allocate(n), bytes, g_window.load()};
    const int64_t now = g_current.fetch_add(counted->bytes) + counted->bytes;
    int64_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    void* data = counted->inner.get();
    const c10::Device device = counted->inner.device();
    return c10::DataPtr(data, counted, &DeleteCounted, device);
  }

  c10::Allocator* inner_;
};

}  // namespace

CpuAllocationCounter& CpuAllocationCounter::Installed() {
  static CpuAllocationCounter* counter = [] {
    static CountingAllocator allocator(c10::GetCPUAllocator());
    g_counted_thread = std::this_thread::get_id();
    // Priority above the default CPU allocator's registration (0).
    c10::SetCPUAllocator(&allocator, /*priority=*/10);
    return new CpuAllocationCounter();
  }();
  return *counter;
}

void CpuAllocationCounter::Mark() {
  // Called on the counted thread, so no counted allocation races with it.
  g_window.fetch_add(1);
  g_current.store(0);
  g_peak.store(0);
}

int64_t CpuAllocationCounter::held_bytes() const { return g_current.load(); }
int64_t CpuAllocationCounter::peak_bytes() const { return g_peak.load(); }

}  // namespace rlswarm::learner::testing
