// The process_* families every Prometheus client library exposes (CPU, memory, file descriptors,
// start time), read from /proc/self at scrape time and named as the Go client names them, so the
// usual alerts work unchanged: memory approaching the container's limit, descriptors approaching
// theirs, restarts. docs/metrics.md has the table.
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "metrics/exposition.h"
#include "metrics/registry.h"

namespace netqos::metrics {

struct ProcessStats {
  double cpu_seconds = 0;         // user + system
  double virtual_bytes = 0;       // vsize
  double resident_bytes = 0;      // rss pages x page size
  double start_time_seconds = 0;  // Unix time
};

// The fields of /proc/<pid>/stat's text that ProcessStats needs; `boot_time_seconds` is
// /proc/stat's btime (the process's start is counted in clock ticks since boot). The command name
// may hold spaces and parentheses: the fields are counted from its last ')'.
Result<ProcessStats> ParseProcStat(std::string_view stat, double ticks_per_second, double page_size,
                                   double boot_time_seconds);
// /proc/stat's "btime" line: the boot time, Unix seconds.
Result<double> ParseBootTime(std::string_view proc_stat);

// The families from /proc/self now. A file that cannot be read or parsed leaves its families
// without a sample (never a false 0).
void CollectProcess(std::vector<Family>* out);
// Adds CollectProcess as a collector of `registry`.
void AddProcessCollector(Registry* registry);

}  // namespace netqos::metrics
