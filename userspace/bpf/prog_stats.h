// What a BPF program costs, from the kernel's own counters: run_cnt and run_time_ns (counted only
// while kernel.bpf_stats_enabled is on, by the sysctl or by an fd of BPF_ENABLE_STATS), and the
// size of the program the kernel runs (translated BPF instructions and JITed bytes), a count that
// does not depend on the machine's load. For benchmarks and for tools that read a running
// daemon's programs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/fd.h"
#include "common/status.h"

namespace netqos::bpf {

struct ProgStats {
  uint32_t id = 0;
  std::string name;           // the kernel's name (the first 15 characters)
  uint64_t run_cnt = 0;       // runs counted while stats were on
  uint64_t run_time_ns = 0;   // their summed time (each run timed by two clock reads)
  uint32_t xlated_bytes = 0;  // the program after the verifier's rewrites, 8 bytes an insn
  uint32_t jited_bytes = 0;   // machine code; 0 when the JIT is off
  uint64_t XlatedInsns() const { return xlated_bytes / 8; }
  // Average ns per counted run; 0 without runs.
  double NsPerRun() const {
    return run_cnt == 0 ? 0 : static_cast<double>(run_time_ns) / static_cast<double>(run_cnt);
  }
  // The runs and time counted since `before` (the same program read earlier).
  ProgStats Since(const ProgStats& before) const;
};

// The counters and sizes of the program behind prog_fd.
Result<ProgStats> ReadProgStats(int prog_fd);
// The same for a program id (NotFound if it is gone).
Result<ProgStats> ReadProgStatsById(uint32_t id);

// Keeps run-time statistics on while it lives (BPF_ENABLE_STATS): the kernel turns them off when
// the last such fd closes, so a crash cannot leave them on, and it never touches the sysctl
// another tool may have set.
class BpfStatsScope {
 public:
  static Result<std::unique_ptr<BpfStatsScope>> Enable();

 private:
  explicit BpfStatsScope(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace netqos::bpf
