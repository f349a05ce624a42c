// A port of Go's time.ParseDuration (src/time/format.go): the same grammar, units, overflow
// limits and rounding, so a value the kubelet or Katalyst would take means the same here.
#include "common/go_duration.h"

#include <cstdint>
#include <string>

namespace netqos {
namespace {

constexpr uint64_t kLimit = uint64_t{1} << 63;  // |int64 min|: the largest magnitude

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

Status Invalid(std::string_view text) {
  return InvalidArgument("invalid duration " + Quoted(text));
}

// Nanoseconds per unit; 0 for an unknown one. Both micro signs are Go's: U+00B5 (micro sign)
// and U+03BC (Greek mu).
uint64_t UnitNanoseconds(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs") return 1000;
  if (unit == "ms") return 1000 * 1000;
  if (unit == "s") return 1000 * 1000 * 1000;
  if (unit == "m") return uint64_t{60} * 1000 * 1000 * 1000;
  if (unit == "h") return uint64_t{3600} * 1000 * 1000 * 1000;
  return 0;
}

// The leading [0-9]* of s; false when the integer exceeds kLimit.
bool LeadingInt(std::string_view& s, uint64_t* x) {
  *x = 0;
  size_t i = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i) {
    if (*x > kLimit / 10) return false;
    *x = *x * 10 + static_cast<uint64_t>(s[i] - '0');
    if (*x > kLimit) return false;
  }
  s.remove_prefix(i);
  return true;
}

// The leading [0-9]* of a fraction: digits past what uint64 holds only stop adding precision.
void LeadingFraction(std::string_view& s, uint64_t* x, double* scale) {
  *x = 0;
  *scale = 1;
  bool overflow = false;
  size_t i = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i) {
    if (overflow) continue;
    if (*x > (kLimit - 1) / 10) {
      overflow = true;
      continue;
    }
    const uint64_t y = *x * 10 + static_cast<uint64_t>(s[i] - '0');
    if (y > kLimit) {
      overflow = true;
      continue;
    }
    *x = y;
    *scale *= 10;
  }
  s.remove_prefix(i);
}

}  // namespace

Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return Invalid(text);
  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || IsDigit(s[0]))) return Invalid(text);
    uint64_t whole = 0;
    const size_t before_int = s.size();
    if (!LeadingInt(s, &whole)) return Invalid(text);
    const bool had_int = s.size() != before_int;
    uint64_t fraction = 0;
    double scale = 1;
    bool had_fraction = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      const size_t before_fraction = s.size();
      LeadingFraction(s, &fraction, &scale);
      had_fraction = s.size() != before_fraction;
    }
    if (!had_int && !had_fraction) return Invalid(text);  // ".s", "-.s"
    size_t unit_len = 0;
    while (unit_len < s.size() && s[unit_len] != '.' && !IsDigit(s[unit_len])) ++unit_len;
    if (unit_len == 0) return InvalidArgument("missing unit in duration " + Quoted(text));
    const std::string_view unit_text = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    const uint64_t unit = UnitNanoseconds(unit_text);
    if (unit == 0) {
      return InvalidArgument("unknown unit " + Quoted(unit_text) + " in duration " + Quoted(text) +
                             " (units: ns, us, ms, s, m, h)");
    }
    if (whole > kLimit / unit) return Invalid(text);
    uint64_t v = whole * unit;
    if (fraction > 0) {
      // A double is exact enough here: fraction * unit / scale is at most 3.6e12 (an hour).
      v += static_cast<uint64_t>(static_cast<double>(fraction) *
                                 (static_cast<double>(unit) / scale));
      if (v > kLimit) return Invalid(text);
    }
    if (v > kLimit - total) return Invalid(text);  // (Go checks after adding, and can wrap)
    total += v;
  }
  if (negative) {
    // -kLimit is int64's minimum: built without negating a value that does not fit.
    if (total == kLimit) return std::chrono::nanoseconds(INT64_MIN);
    return std::chrono::nanoseconds(-static_cast<int64_t>(total));
  }
  if (total > kLimit - 1) return Invalid(text);
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

}  // namespace netqos
