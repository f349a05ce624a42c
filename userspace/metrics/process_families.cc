#include "metrics/process_families.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace netqos::metrics {
namespace {

Family Make(std::string name, std::string help, MetricType type) {
  return Family{std::move(name), std::move(help), type, {}, {}, {}};
}

std::optional<std::string> ReadWhole(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<double> ToNumber(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return static_cast<double>(v);
}

}  // namespace

Result<ProcessStats> ParseProcStat(std::string_view stat, double ticks_per_second, double page_size,
                                   double boot_time_seconds) {
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return InvalidArgument("/proc/self/stat: no ')'");
  // Fields after the command, numbered as proc(5) numbers them: state is field 3.
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  const auto field = [&](size_t n) -> std::optional<double> {
    if (n - 3 >= fields.size()) return std::nullopt;
    return ToNumber(fields[n - 3]);
  };
  const auto utime = field(14), stime = field(15), starttime = field(22), vsize = field(23),
             rss = field(24);
  if (!utime || !stime || !starttime || !vsize || !rss) {
    return InvalidArgument("/proc/self/stat: fields 14, 15, 22, 23 and 24 are not all numbers");
  }
  return ProcessStats{(*utime + *stime) / ticks_per_second, *vsize, *rss * page_size,
                      boot_time_seconds + *starttime / ticks_per_second};
}

Result<double> ParseBootTime(std::string_view proc_stat) {
  constexpr std::string_view kKey = "btime ";
  while (!proc_stat.empty()) {
    const size_t eol = std::min(proc_stat.find('\n'), proc_stat.size());
    const std::string_view line = proc_stat.substr(0, eol);
    if (line.substr(0, kKey.size()) == kKey) {
      if (auto v = ToNumber(line.substr(kKey.size()))) return *v;
      return InvalidArgument("/proc/stat: btime is not a number");
    }
    proc_stat.remove_prefix(std::min(eol + 1, proc_stat.size()));
  }
  return InvalidArgument("/proc/stat: no btime line");
}

void CollectProcess(std::vector<Family>* out) {
  Family cpu = Make("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                    MetricType::kCounter);
  Family resident =
      Make("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::kGauge);
  Family virt =
      Make("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::kGauge);
  Family start = Make("process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.", MetricType::kGauge);
  Family open_fds =
      Make("process_open_fds", "Number of open file descriptors.", MetricType::kGauge);
  Family max_fds =
      Make("process_max_fds", "Maximum number of open file descriptors.", MetricType::kGauge);

  const auto stat = ReadWhole("/proc/self/stat");
  const auto proc_stat = ReadWhole("/proc/stat");
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (stat && proc_stat && ticks > 0 && page > 0) {
    if (auto boot = ParseBootTime(*proc_stat); boot.ok()) {
      if (auto s =
              ParseProcStat(*stat, static_cast<double>(ticks), static_cast<double>(page), *boot);
          s.ok()) {
        cpu.samples.push_back({{}, s->cpu_seconds});
        resident.samples.push_back({{}, s->resident_bytes});
        virt.samples.push_back({{}, s->virtual_bytes});
        start.samples.push_back({{}, s->start_time_seconds});
      }
    }
  }
  std::error_code ec;
  double fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) open_fds.samples.push_back({{}, fds});
  if (struct rlimit limit{}; ::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    max_fds.samples.push_back({{}, static_cast<double>(limit.rlim_cur)});
  }
  for (Family* f : {&cpu, &resident, &virt, &start, &open_fds, &max_fds}) {
    out->push_back(std::move(*f));
  }
}

void AddProcessCollector(Registry* registry) { registry->AddCollector(CollectProcess); }

}  // namespace netqos::metrics
