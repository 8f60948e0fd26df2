#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
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

namespace {

// ISO time with milliseconds, level, role and pid: enough to merge the logs
// of many processes by time and still know who said what.
std::string Pattern(std::string_view role) {
  return "%Y-%m-%dT%H:%M:%S.%e %^%L%$ [" + std::string(role) + " " + std::to_string(::getpid()) +
         "] %v";
}

}  // namespace

void InitLogging(std::string_view role, spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_color_mt("rlswarm");
  logger->set_pattern(Pattern(role));
  logger->set_level(level);
  spdlog::set_default_logger(std::move(logger));
}

void InitLogging(std::string_view role, spdlog::level::level_enum level,
                 const std::string& log_file, spdlog::level::level_enum stderr_level) {
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file;
  try {
    file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file);
  } catch (const spdlog::spdlog_ex& e) {
    throw Unavailable("cannot open log file " + log_file + ": " + e.what());
  }
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  file->set_level(level);
  console->set_level(stderr_level);
  auto logger = std::make_shared<spdlog::logger>(
      "rlswarm", spdlog::sinks_init_list{std::move(file), std::move(console)});
  logger->set_pattern(Pattern(role));
  logger->set_level(std::min(level, stderr_level));
  logger->flush_on(spdlog::level::info);
  spdlog::drop("rlswarm");
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace rlswarm
