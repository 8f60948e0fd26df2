#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <string>

#include "common/errors.h"

namespace rlswarm {

spdlog::level::level_enum ParseLogLevel(std::string_view name) {
  static constexpr std::string_view kNames[] = {"trace", "debug",    "info", "warn",
                                                "error", "critical", "off"};
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i) {
    if (kNames[i] == name) return static_cast<spdlog::level::level_enum>(i);
  }
  throw InvalidArgument("unknown log level '" + std::string(name) +
                        "' (known: trace, debug, info, warn, error, critical, off)");
}

void InitLogging(std::string_view role, spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_color_mt("rlswarm");
  // ISO time with milliseconds, level, role and pid: enough to merge the logs
  // of many processes by time and still know who said what.
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [" + std::string(role) + " " +
                      std::to_string(::getpid()) + "] %v");
  logger->set_level(level);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace rlswarm
