#include "learner/runtime/collective_errors.h"

#include <algorithm>
#include <cctype>

#include "common/errors.h"

namespace rlswarm::learner {

void ThrowCollectiveError(const std::string& context, const std::exception& cause,
                          std::chrono::milliseconds timeout) {
  std::string what = cause.what();
  // c10::Error appends a C++ backtrace; the first line carries the reason.
  const size_t newline = what.find('\n');
  std::string first = newline == std::string::npos ? what : what.substr(0, newline);
  std::string lower = first;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::string message =
      context + ": " + first + " (timeout " + std::to_string(timeout.count()) + " ms)";
  // "deadline": the learner's store (rpc_store.h) timing out, as LibTorch
  // 2.x's Gloo rethrows it inside its own error.
  if (lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos ||
      lower.find("deadline") != std::string::npos) {
    throw DeadlineExceeded(message);
  }
  throw Unavailable(message + "; a peer rank probably died or closed its connection");
}

}  // namespace rlswarm::learner
