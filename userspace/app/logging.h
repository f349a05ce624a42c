// Process-wide logging setup for netqosd: spdlog to stderr, one line per event, key=value pairs
// ("text"), or one JSON object per line ("json", for log shippers): {"ts", "level", "msg", and
// the message's trailing key=value pairs as string fields}.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace netqos::app {

// --log-level: spdlog's levels (flag spellings in app/flag_choices.h).
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
// --log-format: key=value text, or one JSON object per line.
enum class LogFormat { kText, kJson };

void SetupLogging(LogLevel level, LogFormat format = LogFormat::kText);

// A house-style message, "what happened k=v k2=\"a quoted value\"", split into its text ("what
// happened") and its pairs, in order. Quoted values lose their quotes (\" and \\ unescaped); a
// quoted value ends at a quote followed by the end or by another pair, so an unescaped quote
// inside survives. A message that does not end in well-formed pairs is all text.
struct SplitMessage {
  std::string text;
  std::vector<std::pair<std::string, std::string>> fields;
};
SplitMessage SplitKeyValues(std::string_view message);

// One JSON line (with its '\n'): {"ts": "2024-05-01T12:00:00.123Z" (UTC), "level", "msg",
// fields...}. A field named ts, level or msg is renamed field_ts, field_level, field_msg.
std::string FormatJsonLogLine(std::chrono::system_clock::time_point ts, std::string_view level,
                              std::string_view message);

}  // namespace netqos::app
