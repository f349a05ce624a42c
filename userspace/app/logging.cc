#include "app/logging.h"

#include <bpf/libbpf.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

namespace netqos::app {
namespace {

// libbpf prints to stderr by default; its messages go through our logger instead. The kernel's
// extended-ack texts ("Exclusivity flag on", "Parent Qdisc doesn't exists") come from netlink
// probes whose failure is expected and handled, so they only show at debug level; real failures
// are returned as errors by the calls that hit them.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  std::string_view msg(buf, n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
  while (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  if (msg.rfind("libbpf: ", 0) == 0) msg.remove_prefix(8);  // libbpf prefixes its own lines
  const bool probe = msg.rfind("Kernel error message:", 0) == 0;
  if (level == LIBBPF_WARN && !probe) {
    spdlog::warn("libbpf: {}", msg);
  } else {
    spdlog::debug("libbpf: {}", msg);
  }
  return n;
}

bool IsKeyStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsKeyChar(char c) { return IsKeyStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

// Length of "key=" at `i`, 0 if there is none.
size_t KeyAt(std::string_view s, size_t i) {
  if (i >= s.size() || !IsKeyStart(s[i])) return 0;
  size_t j = i + 1;
  while (j < s.size() && IsKeyChar(s[j])) ++j;
  return j < s.size() && s[j] == '=' ? j - i + 1 : 0;
}

size_t SkipSpaces(std::string_view s, size_t i) {
  while (i < s.size() && s[i] == ' ') ++i;
  return i;
}

// Parses s[i..] as key=value pairs separated by spaces; false if any of it is something else.
bool ParsePairs(std::string_view s, size_t i, SplitMessage* out) {
  while (i < s.size()) {
    const size_t k = KeyAt(s, i);
    if (k == 0) return false;
    std::string key(s.substr(i, k - 1));
    i += k;
    std::string value;
    if (i < s.size() && s[i] == '"') {
      bool closed = false;
      for (size_t j = i + 1; j < s.size(); ++j) {
        const char c = s[j];
        if (c == '\\' && j + 1 < s.size() && (s[j + 1] == '"' || s[j + 1] == '\\')) {
          value += s[++j];
          continue;
        }
        if (c == '"') {
          if (j + 1 == s.size()) {
            i = j + 1;
            closed = true;
            break;
          }
          const size_t next = SkipSpaces(s, j + 1);
          if (next > j + 1 && KeyAt(s, next) > 0) {
            i = next;
            closed = true;
            break;
          }
        }
        value += c;
      }
      if (!closed) return false;
    } else {
      size_t end = s.find(' ', i);
      if (end == std::string_view::npos) end = s.size();
      value = std::string(s.substr(i, end - i));
      i = SkipSpaces(s, end);
    }
    out->fields.emplace_back(std::move(key), std::move(value));
  }
  return true;
}

// spdlog formatter writing FormatJsonLogLine.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string line =
        FormatJsonLogLine(msg.time, std::string_view(level.data(), level.size()),
                          std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

spdlog::level::level_enum SpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kCritical:
      return spdlog::level::critical;
    case LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

SplitMessage SplitKeyValues(std::string_view message) {
  for (size_t p = 0; p < message.size(); ++p) {
    if ((p > 0 && message[p - 1] != ' ') || KeyAt(message, p) == 0) continue;
    SplitMessage out;
    if (!ParsePairs(message, p, &out)) continue;
    size_t end = p;
    while (end > 0 && message[end - 1] == ' ') --end;
    out.text = std::string(message.substr(0, end));
    return out;
  }
  return {std::string(message), {}};
}

std::string FormatJsonLogLine(std::chrono::system_clock::time_point ts, std::string_view level,
                              std::string_view message) {
  const auto since_epoch = ts.time_since_epoch();
  const time_t secs =
      static_cast<time_t>(std::chrono::floor<std::chrono::seconds>(since_epoch).count());
  const auto millis = std::chrono::floor<std::chrono::milliseconds>(since_epoch).count() % 1000;
  struct tm utc {};
  gmtime_r(&secs, &utc);
  char stamp[96];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));

  const SplitMessage split = SplitKeyValues(message);
  nlohmann::ordered_json line;
  line["ts"] = stamp;
  line["level"] = std::string(level);
  line["msg"] = split.text;
  for (const auto& [key, value] : split.fields) {
    const bool reserved = key == "ts" || key == "level" || key == "msg";
    line[reserved ? "field_" + key : key] = value;
  }
  // Invalid UTF-8 (a raw kernel string) is replaced, never a reason to lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void SetupLogging(LogLevel level, LogFormat format) {
  auto logger = spdlog::stderr_logger_mt("netqosd");
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  }
  logger->set_level(SpdlogLevel(level));
  // Errors must reach the log even if the process is killed right after.
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  libbpf_set_print(LibbpfPrint);
}

}  // namespace netqos::app
