#pragma once

// Files a test shares with its child processes: a scratch directory, and a
// line a child writes when it is ready (e.g. its bound endpoint). Test and
// bench support, not a library of the product.

#include <chrono>
#include <string>

namespace rlswarm::testing {

// Polls (every 5 ms) until `path` exists and holds a non-empty first line;
// returns it, or "" when none appears within `timeout`. The child writes the
// file when it is ready, so its appearance is the synchronisation.
std::string WaitForFileLine(const std::string& path, std::chrono::milliseconds timeout);

// A fresh directory under the system's temp directory, removed (with all it
// holds) when destroyed. Thread safety: none needed after construction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // "" when the directory could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace rlswarm::testing
