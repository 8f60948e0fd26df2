#pragma once

// Helpers for the replay tests (not part of the library).

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "replay/table.h"

namespace rlswarm::replay::testing {

// observation float32[4], action int64 scalar, reward float32 scalar.
inline Signature TestSignature() {
  return {{{"observation", DType::kFloat32, {4}},
           {"action", DType::kInt64, {}},
           {"reward", DType::kFloat32, {}}}};
}

inline TableOptions TestOptions(std::int64_t capacity, SelectorKind kind = SelectorKind::kUniform) {
  TableOptions options;
  options.name = "test";
  options.signature = TestSignature();
  options.capacity = capacity;
  options.selector.kind = kind;
  options.chunk_rows = 4;  // small chunks: copy-on-write paths get exercised
  return options;
}

// Owns the data of a batch of n items; item i has action = first + i,
// reward = first + i and observation {first + i, 0.5, 1.5, 2.5}.
class TestBatch {
 public:
  explicit TestBatch(std::int64_t n, std::int64_t first = 0) : n_(n) {
    observation_.reserve(static_cast<std::size_t>(4 * n));
    for (std::int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<float>(first + i);
      for (float x : {v, 0.5f, 1.5f, 2.5f}) observation_.push_back(x);
      action_.push_back(first + i);
      reward_.push_back(v);
    }
    obs_shape_ = {n, 4};
    scalar_shape_ = {n};
  }

  InsertBatch Get(std::span<const double> priorities = {}, std::int64_t version = 0) const {
    InsertBatch batch;
    batch.fields = {
        {"observation", DType::kFloat32, obs_shape_, std::as_bytes(std::span(observation_))},
        {"action", DType::kInt64, scalar_shape_, std::as_bytes(std::span(action_))},
        {"reward", DType::kFloat32, scalar_shape_, std::as_bytes(std::span(reward_))}};
    batch.priorities = priorities;
    batch.policy_version = version;
    return batch;
  }

 private:
  std::int64_t n_;
  std::vector<float> observation_;
  std::vector<std::int64_t> action_;
  std::vector<float> reward_;
  std::vector<std::int64_t> obs_shape_;
  std::vector<std::int64_t> scalar_shape_;
};

// Element i of a sampled field, as T.
template <class T>
T FieldAt(const SampledField& field, std::size_t i) {
  T value;
  std::memcpy(&value, field.data.get() + i * sizeof(T), sizeof(T));
  return value;
}

// Waits (yielding, not sleeping) until `done()` or the timeout; true if done.
template <class Predicate>
bool WaitFor(Predicate done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

inline Deadline In(std::chrono::milliseconds d) { return std::chrono::steady_clock::now() + d; }

}  // namespace rlswarm::replay::testing
