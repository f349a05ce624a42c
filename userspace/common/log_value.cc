#include "common/log_value.h"

#include <cstdio>

namespace netqos {
namespace {

bool Plain(std::string_view v) {
  if (v.empty()) return false;
  for (unsigned char c : v) {
    if (c <= ' ' || c == '"' || c == '\\' || c == '=' || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string LogValue(std::string_view value) {
  if (Plain(value)) return std::string(value);
  std::string out = "\"";
  for (unsigned char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace netqos
