#include "common/terminal_text.h"

#include <cstdint>
#include <cstdio>

namespace netqos {
namespace {

void Hex(std::string& out, const char* format, unsigned value) {
  char buf[12];
  std::snprintf(buf, sizeof(buf), format, value);
  out += buf;
}

// The length of the valid UTF-8 sequence at `s` (1..4), or 0 when it is not one (overlong forms,
// surrogates and code points above U+10FFFF included).
size_t Utf8Length(std::string_view s, uint32_t* code_point) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) {
    *code_point = c;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b(i) & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
    return 0;
  }
  *code_point = cp;
  return n;
}

}  // namespace

std::string TerminalText(std::string_view text, size_t max_bytes) {
  const std::string_view shown = text.substr(0, max_bytes);
  std::string out;
  out.reserve(shown.size());
  for (size_t i = 0; i < shown.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8Length(shown.substr(i), &cp);
    if (n == 0) {
      Hex(out, "\\x%02x", static_cast<unsigned char>(shown[i]));
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f) {
      Hex(out, "\\x%02x", cp);
    } else if (cp >= 0x80 && cp <= 0x9f) {
      Hex(out, "\\u%04x", cp);
    } else {
      out.append(shown.substr(i, n));
    }
    i += n;
  }
  if (text.size() > max_bytes) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace netqos
