#include "launch/process_control.h"

#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace rlswarm::launch {

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

void WriteLinesAtomically(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  WriteFileAtomically(path, text);
}

}  // namespace rlswarm::launch
