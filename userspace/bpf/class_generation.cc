// BumpClassGeneration: one lookup and one update on the pinned array. See class_generation.h.
#include "bpf/class_generation.h"

#include <bpf/bpf.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "common/errno_status.h"
#include "netqos_abi.h"

namespace netqos::bpf {
namespace {

constexpr const char* kName = NETQOS_STR(NETQOS_MAP_CLASS_GEN);

}  // namespace

Result<uint64_t> ReadClassGeneration(int fd) {
  const uint32_t key = 0;
  uint64_t value = 0;
  if (int err = bpf_map_lookup_elem(fd, &key, &value); err) {
    return ErrnoStatus(std::string("bpf_map_lookup_elem(") + kName + ")", err);
  }
  return value;
}

Status BumpClassGeneration(int fd) {
  NETQOS_ASSIGN_OR_RETURN(const uint64_t old, ReadClassGeneration(fd));
  timespec now{};
  if (::clock_gettime(CLOCK_MONOTONIC, &now) != 0) {
    return ErrnoStatus("clock_gettime(CLOCK_MONOTONIC)", errno);
  }
  const uint64_t clock_ns =
      static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
  const uint64_t next = std::max(old + 1, clock_ns);
  const uint32_t key = 0;
  if (int err = bpf_map_update_elem(fd, &key, &next, BPF_ANY); err) {
    return ErrnoStatus(std::string("bpf_map_update_elem(") + kName + ")", err);
  }
  return Status::Ok();
}

}  // namespace netqos::bpf
