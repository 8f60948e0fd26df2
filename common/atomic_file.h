#pragma once

// Whole-file writes that a reader (or a crash) sees either before or after,
// never half done: summaries, configs, keys, target lists, traces.

#include <sys/types.h>

#include <string>
#include <string_view>

namespace rlswarm {

// Writes `contents` to `path` with permissions `mode`: a temporary file in
// the same directory, fsync, rename over `path`, fsync of the directory.
// On failure the temporary file is removed, `path` is untouched, and the
// error names the file, the step and the system's reason:
// ResourceExhausted for a full disk or quota (ENOSPC, EDQUOT), Unavailable
// for anything else.
void WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode = 0644);

}  // namespace rlswarm
