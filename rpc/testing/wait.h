#pragma once

// Test helper: wait for a condition with a deadline instead of sleeping.

#include <chrono>
#include <thread>

namespace rlswarm::rpc::testing {

// Polls `condition` every millisecond until it holds (true) or `timeout`
// passes (false).
template <class Condition>
bool WaitUntil(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace rlswarm::rpc::testing
