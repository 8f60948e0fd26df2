#include "apps/process_control.h"

#include <filesystem>
#include <fstream>

#include "common/errors.h"

namespace rlswarm::apps {

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

void WriteLinesAtomically(const std::string& path, const std::vector<std::string>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (const std::string& line : lines) out << line << "\n";
    out.flush();
    if (!out) throw Unavailable("cannot write " + tmp);
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) throw Unavailable("cannot rename " + tmp + " to " + path + ": " + error.message());
}

}  // namespace rlswarm::apps
