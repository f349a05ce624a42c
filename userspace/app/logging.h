// Process-wide logging setup for netqosd: spdlog to stderr, one line per event, key=value pairs.
#pragma once

#include <string>

namespace netqos::app {

void SetupLogging(const std::string& level);

}  // namespace netqos::app
