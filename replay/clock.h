#pragma once

// The wall clock the table stamps items with (insert time, for staleness and
// rates). Injected so tests can control time; insert times are wall-clock
// nanoseconds since the Unix epoch so they stay meaningful across a restart
// from a checkpoint. Deadlines of blocking calls do not use this clock: they
// are std::chrono::steady_clock time points.
//
// Implementations must be thread safe.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace rlswarm::replay {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t NowNanos() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::int64_t NowNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to (tests).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t now_ns = 0) : now_ns_(now_ns) {}
  std::int64_t NowNanos() const override { return now_ns_.load(); }
  void Advance(std::int64_t ns) { now_ns_ += ns; }

 private:
  std::atomic<std::int64_t> now_ns_;
};

}  // namespace rlswarm::replay
