#include "metrics/bind_address.h"

#include <arpa/inet.h>

namespace netqos::metrics {
namespace {

bool IsHostName(const std::string& host) {
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.') return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string BindAddress::Text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<BindAddress> ParseBindAddress(const std::string& address) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--metrics-bind-address \"" + address + "\": " + why +
                           " (expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9465)");
  };
  BindAddress out;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    const auto close = address.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    out.host = address.substr(1, close - 1);
    if (close + 1 >= address.size() || address[close + 1] != ':') return bad("no port");
    port = address.substr(close + 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, out.host.c_str(), &a6) != 1) return bad("not an IPv6 address");
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    out.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) return bad("an IPv6 address needs brackets");
    if (out.host.empty()) out.host = "0.0.0.0";
    in_addr a4{};
    if (inet_pton(AF_INET, out.host.c_str(), &a4) != 1 && !IsHostName(out.host))
      return bad("not an IPv4 address or host name");
  }
  if (port.empty() || port.size() > 5) return bad("bad port");
  int p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("bad port");
    p = p * 10 + (c - '0');
  }
  if (p > 65535) return bad("port above 65535");
  out.port = p;
  return out;
}

}  // namespace netqos::metrics
