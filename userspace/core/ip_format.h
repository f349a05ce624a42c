// IP address parsing and printing that matches Go's net.ParseIP / net.IP.String(), so the
// addresses in allocation annotations are byte-for-byte what Katalyst reports.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace netqos::core {

// An address in Go's 16-byte form: IPv4 addresses are stored IPv4-mapped (::ffff:a.b.c.d).
using IpBytes = std::array<uint8_t, 16>;

// Accepts what net.ParseIP accepts: dotted IPv4 (no leading zeros) or textual IPv6 with at most
// one "::" and an optional trailing dotted IPv4 part. Zones ("%eth0") are rejected.
Result<IpBytes> ParseIp(std::string_view text);

// Prints like net.IP.String(): IPv4 and IPv4-mapped IPv6 in dotted form; other IPv6 addresses
// in lowercase hex with the longest run (>= 2 groups, first on ties) of zero groups as "::".
std::string FormatIp(const IpBytes& ip);

// ParseIp followed by FormatIp; the error names the offending text.
Result<std::string> NormalizeIp(std::string_view text);

}  // namespace netqos::core
