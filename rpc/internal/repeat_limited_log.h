#pragma once

// Rate-limits a log line that an outside party can repeat at will (a
// rejected client retrying its handshake every few milliseconds): the first
// occurrence of each key is logged, then at most one line per interval that
// says how many were left out since. Not thread safe: one per thread (the ZAP
// handler has its own).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace rlswarm::rpc::internal {

class RepeatLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;
  // At most this many keys are remembered; beyond it the oldest-logged are
  // forgotten (an attacker cycling keys cannot grow the map without bound).
  static constexpr std::size_t kMaxKeys = 1024;

  explicit RepeatLimitedLog(Clock::duration interval) : interval_(interval) {}

  // Whether an occurrence of `key` at `now` is to be logged; if so, how
  // many occurrences were left out before it (0 for the first).
  std::optional<std::int64_t> Admit(const std::string& key, Clock::time_point now) {
    auto it = seen_.find(key);
    if (it == seen_.end()) {
      if (seen_.size() >= kMaxKeys) ForgetOldest();
      seen_.emplace(key, Entry{now, 0});
      return 0;
    }
    Entry& e = it->second;
    if (now - e.logged_at < interval_) {
      ++e.left_out;
      return std::nullopt;
    }
    const std::int64_t left_out = e.left_out;
    e = Entry{now, 0};
    return left_out;
  }

 private:
  struct Entry {
    Clock::time_point logged_at;
    std::int64_t left_out = 0;
  };

  void ForgetOldest() {
    auto oldest = seen_.begin();
    for (auto it = seen_.begin(); it != seen_.end(); ++it) {
      if (it->second.logged_at < oldest->second.logged_at) oldest = it;
    }
    seen_.erase(oldest);
  }

  Clock::duration interval_;
  std::map<std::string, Entry> seen_;
};

}  // namespace rlswarm::rpc::internal
