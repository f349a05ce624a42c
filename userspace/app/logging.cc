#include "app/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace netqos::app {

void SetupLogging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("netqosd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  logger->set_level(spdlog::level::from_str(level));
  // Errors must reach the log even if the process is killed right after.
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace netqos::app
