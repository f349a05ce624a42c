#include "core/ip_format.h"

#include <vector>

namespace netqos::core {
namespace {

bool ParseIpv4(std::string_view s, uint8_t out[4]) {
  int field = 0;
  size_t i = 0;
  while (field < 4) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    size_t start = i;
    int value = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      value = value * 10 + (s[i] - '0');
      if (value > 255) return false;
      ++i;
    }
    // Go rejects leading zeros ("01") since 1.17: they are ambiguous (octal in some parsers).
    if (i - start > 1 && s[start] == '0') return false;
    out[field++] = static_cast<uint8_t>(value);
    if (field < 4) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  return i == s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseIpv6(std::string_view s, IpBytes& ip) {
  ip.fill(0);
  int ellipsis = -1;  // byte offset where "::" expands
  size_t i = 0;
  int n = 0;  // bytes filled
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    ellipsis = 0;
    i = 2;
    if (i == s.size()) return true;  // "::"
  }
  while (n < 16) {
    // A group of 1-4 hex digits, or a trailing dotted IPv4 part.
    size_t start = i;
    int value = 0;
    while (i < s.size() && HexValue(s[i]) >= 0 && i - start < 5) {
      value = value * 16 + HexValue(s[i]);
      ++i;
    }
    size_t digits = i - start;
    if (i < s.size() && s[i] == '.') {
      if (ellipsis < 0 && n != 12) return false;
      if (n + 4 > 16) return false;
      uint8_t v4[4];
      if (!ParseIpv4(s.substr(start), v4)) return false;
      for (int k = 0; k < 4; ++k) ip[static_cast<size_t>(n + k)] = v4[k];
      n += 4;
      i = s.size();
      break;
    }
    if (digits == 0 || digits > 4) return false;
    ip[static_cast<size_t>(n)] = static_cast<uint8_t>(value >> 8);
    ip[static_cast<size_t>(n + 1)] = static_cast<uint8_t>(value & 0xff);
    n += 2;
    if (i == s.size()) break;
    if (s[i] != ':') return false;
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (ellipsis >= 0) return false;  // a second "::"
      ellipsis = n;
      ++i;
      if (i == s.size()) break;
    } else if (i == s.size()) {
      return false;  // trailing single ':'
    }
  }
  if (i != s.size()) return false;
  if (n < 16) {
    if (ellipsis < 0) return false;
    int shift = 16 - n;
    for (int j = n - 1; j >= ellipsis; --j) {
      ip[static_cast<size_t>(j + shift)] = ip[static_cast<size_t>(j)];
    }
    for (int j = ellipsis; j < ellipsis + shift; ++j) ip[static_cast<size_t>(j)] = 0;
  } else if (ellipsis >= 0) {
    return false;  // "::" must stand for at least one group
  }
  return true;
}

bool IsV4Mapped(const IpBytes& ip) {
  for (size_t k = 0; k < 10; ++k) {
    if (ip[k] != 0) return false;
  }
  return ip[10] == 0xff && ip[11] == 0xff;
}

}  // namespace

Result<IpBytes> ParseIp(std::string_view text) {
  IpBytes ip{};
  uint8_t v4[4];
  if (text.find(':') == std::string_view::npos) {
    if (!ParseIpv4(text, v4)) {
      return InvalidArgument("unparsable IP address \"" + std::string(text) + "\"");
    }
    ip[10] = 0xff;
    ip[11] = 0xff;
    for (size_t k = 0; k < 4; ++k) ip[12 + k] = v4[k];
    return ip;
  }
  if (!ParseIpv6(text, ip)) {
    return InvalidArgument("unparsable IP address \"" + std::string(text) + "\"");
  }
  return ip;
}

std::string FormatIp(const IpBytes& ip) {
  if (IsV4Mapped(ip)) {
    return std::to_string(ip[12]) + "." + std::to_string(ip[13]) + "." + std::to_string(ip[14]) +
           "." + std::to_string(ip[15]);
  }
  int groups[8];
  for (int g = 0; g < 8; ++g) {
    groups[g] = (ip[static_cast<size_t>(2 * g)] << 8) | ip[static_cast<size_t>(2 * g + 1)];
  }
  // The longest run of zero groups, first on ties; a single zero group is not compressed.
  int best_start = -1;
  int best_len = 0;
  for (int g = 0; g < 8;) {
    if (groups[g] != 0) {
      ++g;
      continue;
    }
    int start = g;
    while (g < 8 && groups[g] == 0) ++g;
    if (g - start > best_len) {
      best_start = start;
      best_len = g - start;
    }
  }
  if (best_len < 2) best_start = -1;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int g = 0; g < 8; ++g) {
    if (g == best_start) {
      out += "::";
      g += best_len - 1;
      continue;
    }
    // Right after the run, "::" already separates this group from the previous one.
    if (g > 0 && g != best_start + best_len) out += ':';
    int v = groups[g];
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      int digit = (v >> shift) & 0xf;
      if (digit != 0 || started || shift == 0) {
        out += kHex[digit];
        started = true;
      }
    }
  }
  return out;
}

Result<std::string> NormalizeIp(std::string_view text) {
  NETQOS_ASSIGN_OR_RETURN(IpBytes ip, ParseIp(text));
  return FormatIp(ip);
}

}  // namespace netqos::core
