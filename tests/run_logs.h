#pragma once

// Reading a processes-mode run's logs from the tests that kill its roles.

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace rlswarm::testing {

// The pid of the newest incarnation of `name` (the supervisor's banner
// "=== <name> started pid N (restart k) ===" in logs/<name>.log) and how many
// incarnations there were.
inline std::pair<pid_t, int> Incarnation(const std::filesystem::path& run,
                                         const std::string& name) {
  std::ifstream in(run / "logs" / (name + ".log"));
  const std::string banner = "=== " + name + " started pid ";
  pid_t pid = 0;
  int count = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(banner, 0) != 0) continue;
    pid = static_cast<pid_t>(std::stol(line.substr(banner.size())));
    ++count;
  }
  return {pid, count};
}

}  // namespace rlswarm::testing
