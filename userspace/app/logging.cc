#include "app/logging.h"

#include <bpf/libbpf.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
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
  const bool probe = msg.rfind("Kernel error message:", 0) == 0;
  if (level == LIBBPF_WARN && !probe) {
    spdlog::warn("libbpf: {}", msg);
  } else {
    spdlog::debug("libbpf: {}", msg);
  }
  return n;
}

}  // namespace

void SetupLogging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("netqosd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  logger->set_level(spdlog::level::from_str(level));
  // Errors must reach the log even if the process is killed right after.
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  libbpf_set_print(LibbpfPrint);
}

}  // namespace netqos::app
