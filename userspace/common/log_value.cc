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

namespace {

// At most max_bytes of value, cut where no UTF-8 sequence is split: the continuation bytes
// (10xxxxxx) at the cut are backed off, and with them their lead byte.
std::string_view Cut(std::string_view value, size_t max_bytes) {
  if (value.size() <= max_bytes) return value;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xc0) == 0x80) --cut;
  return value.substr(0, cut);
}

std::string CutNote(std::string_view value, size_t max_bytes) {
  return value.size() > max_bytes ? "...(" + std::to_string(value.size()) + " bytes)" : "";
}

}  // namespace

std::string BoundedLogValue(std::string_view value, size_t max_bytes) {
  return LogValue(Cut(value, max_bytes)) + CutNote(value, max_bytes);
}

std::string QuotedValue(std::string_view value, size_t max_bytes) {
  std::string out = LogValue(Cut(value, max_bytes));
  if (out.empty() || out.front() != '"') out = "\"" + out + "\"";
  return out + CutNote(value, max_bytes);
}

}  // namespace netqos
