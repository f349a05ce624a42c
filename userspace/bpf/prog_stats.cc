#include "bpf/prog_stats.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cerrno>

#include "common/errno_status.h"

namespace netqos::bpf {

ProgStats ProgStats::Since(const ProgStats& before) const {
  ProgStats d = *this;
  d.run_cnt = run_cnt >= before.run_cnt ? run_cnt - before.run_cnt : 0;
  d.run_time_ns = run_time_ns >= before.run_time_ns ? run_time_ns - before.run_time_ns : 0;
  return d;
}

Result<ProgStats> ReadProgStats(int prog_fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (const int err = bpf_obj_get_info_by_fd(prog_fd, &info, &len); err) {
    return ErrnoStatus("bpf_obj_get_info_by_fd(fd " + std::to_string(prog_fd) + ")", err);
  }
  ProgStats s;
  s.id = info.id;
  s.name = info.name;
  s.run_cnt = info.run_cnt;
  s.run_time_ns = info.run_time_ns;
  s.xlated_bytes = info.xlated_prog_len;
  s.jited_bytes = info.jited_prog_len;
  return s;
}

Result<ProgStats> ReadProgStatsById(uint32_t id) {
  const Fd fd(bpf_prog_get_fd_by_id(id));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) return NotFound("BPF program id " + std::to_string(id) + " is gone");
    return ErrnoStatus("bpf_prog_get_fd_by_id(" + std::to_string(id) + ")", err);
  }
  return ReadProgStats(fd.get());
}

Result<std::unique_ptr<BpfStatsScope>> BpfStatsScope::Enable() {
  Fd fd(bpf_enable_stats(BPF_STATS_RUN_TIME));
  if (!fd) return ErrnoStatus("bpf(BPF_ENABLE_STATS, BPF_STATS_RUN_TIME)", errno);
  return std::unique_ptr<BpfStatsScope>(new BpfStatsScope(std::move(fd)));
}

}  // namespace netqos::bpf
