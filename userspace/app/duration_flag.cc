#include "app/duration_flag.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/go_duration.h"

namespace netqos::app {
namespace {

bool IsWholeNumber(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string Named(std::string_view flag, std::string_view text) {
  return std::string(flag) + "=\"" + std::string(text) + "\"";
}

// The bounds in the whole seconds these flags took before: "2147483647s", not "596523h14m7s".
std::string SecondsText(std::chrono::milliseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

}  // namespace

Result<std::chrono::milliseconds> ParseDurationFlag(std::string_view flag, std::string_view text) {
  using std::chrono::nanoseconds;
  const std::string bounds =
      " (from " + SecondsText(kMinDurationFlag) + " to " + SecondsText(kMaxDurationFlag) + ")";
  nanoseconds d{0};
  if (IsWholeNumber(text)) {
    // The plain seconds these flags took before; bounded before it becomes nanoseconds, which
    // hold only 292 years.
    const bool negative = text[0] == '-';
    std::string_view digits = text.substr(text[0] == '-' || text[0] == '+' ? 1 : 0);
    digits.remove_prefix(std::min(digits.find_first_not_of('0'), digits.size()));
    int64_t secs = 0;
    if (digits.size() > 12) {
      secs = INT64_MAX;  // more than any bound: "too long" below
    } else if (!digits.empty()) {
      secs = std::stoll(std::string(digits));
    }
    if (negative && secs > 0) return InvalidArgument(Named(flag, text) + ": must not be negative");
    if (secs > std::chrono::duration_cast<std::chrono::seconds>(kMaxDurationFlag).count())
      return InvalidArgument(Named(flag, text) + ": too long" + bounds);
    d = std::chrono::seconds(secs);
  } else {
    auto parsed = ParseGoDuration(text);
    if (!parsed.ok()) {
      return InvalidArgument(Named(flag, text) + ": " + parsed.status().message() +
                             "; expected a duration such as 30s, 1m30s or 1.5h, or a whole "
                             "number of seconds");
    }
    d = *parsed;
  }
  if (d < nanoseconds(0)) return InvalidArgument(Named(flag, text) + ": must not be negative");
  if (d < kMinDurationFlag) return InvalidArgument(Named(flag, text) + ": too short" + bounds);
  if (d > kMaxDurationFlag) return InvalidArgument(Named(flag, text) + ": too long" + bounds);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  if (ms != d) {
    return InvalidArgument(Named(flag, text) + ": finer than a millisecond, the precision of " +
                           std::string(flag));
  }
  return ms;
}

std::string DurationFlagText(std::chrono::milliseconds d) {
  // Go's time.Duration.String(), for whole milliseconds: "0s", "500ms", "1.5s", "1m30s",
  // "1h0m0s".
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out = ms < 0 ? "-" : "";
  const uint64_t total = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
  if (total < 1000) return out + std::to_string(total) + "ms";
  const uint64_t hours = total / 3'600'000;
  const uint64_t minutes = total / 60'000 % 60;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  out += std::to_string(total / 1000 % 60);
  if (uint64_t frac = total % 1000; frac > 0) {
    std::string digits = std::to_string(1000 + frac).substr(1);  // three digits, leading zeros
    digits.erase(digits.find_last_not_of('0') + 1);
    out += "." + digits;
  }
  return out + "s";
}

}  // namespace netqos::app
