#pragma once

// Process-wide logging through spdlog. Every line carries a timestamp, the
// level and the process's role (e.g. "actor/3", "replay/0", "cli"), so the
// interleaved logs of a swarm can be told apart. Log to stderr; stdout is kept
// for machine-readable output (--json).

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

namespace rlswarm {

// Parses "trace", "debug", "info", "warn", "error", "critical" or "off";
// throws InvalidArgument naming the accepted levels otherwise.
spdlog::level::level_enum ParseLogLevel(std::string_view name);

// Replaces the default logger with a stderr logger tagged with `role`.
// Call once at start-up, before any thread logs.
void InitLogging(std::string_view role, spdlog::level::level_enum level);

// As above, but every line at `level` or above goes to `log_file`
// (appended), and only lines at `stderr_level` or above to stderr: for a
// launcher whose terminal shows a progress line. Throws Unavailable when the
// file cannot be opened.
void InitLogging(std::string_view role, spdlog::level::level_enum level,
                 const std::string& log_file, spdlog::level::level_enum stderr_level);

}  // namespace rlswarm
