// The address the metrics listener binds (--metrics-bind-address), read once when netqosd reads
// its flags; the listener (metrics/http_server.h) takes the typed value.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::metrics {

struct BindAddress {
  std::string host;  // IPv4/IPv6 literal (no brackets) or a host name; "0.0.0.0" for ":PORT"
  int port = 0;      // 0: any free port (tests)
  std::string Text() const;  // host:port, [v6]:port
  bool operator==(const BindAddress&) const = default;
};

// "HOST:PORT", "[V6]:PORT" or ":PORT" (every IPv4 address). Port 0..65535 (0 = pick a free one).
// Errors name the flag and the value as given.
Result<BindAddress> ParseBindAddress(const std::string& address);

}  // namespace netqos::metrics
