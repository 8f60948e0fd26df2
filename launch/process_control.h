#pragma once

// What every role command does with its process: take SIGTERM/SIGINT as a
// request to stop cleanly, and publish the endpoints it bound for launchers
// and tests to read.

#include <signal.h>

#include <string>
#include <vector>

namespace rlswarm::launch {

// Blocks SIGTERM and SIGINT in the calling thread (call it before starting
// any thread: every thread inherits the mask), so they stay pending until the
// command waits for them (sigwait) or polls them (sigtimedwait). Returns the
// set.
sigset_t BlockStopSignals();

// Writes `lines` (one per line) to `path` through a temporary file and a
// rename, so a reader never sees half a file. Throws Unavailable.
void WriteLinesAtomically(const std::string& path, const std::vector<std::string>& lines);

}  // namespace rlswarm::launch
