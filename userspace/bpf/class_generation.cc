// BumpClassGeneration: one lookup and one update of the carrier array's slot 0. See
// class_generation.h.
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

constexpr const char* kWhere = NETQOS_STR(NETQOS_MAP_CARRIER) ", slot 0 (class generation)";

}  // namespace

Result<uint64_t> ReadClassGeneration(int fd) {
  const uint32_t key = NETQOS_CLASS_GEN_SLOT;
  uint64_t value = 0;
  if (int err = bpf_map_lookup_elem(fd, &key, &value); err) {
    return ErrnoStatus(std::string("bpf_map_lookup_elem(") + kWhere + ")", err);
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
  // Compared without the bit: the clock stays far below it (292 years of uptime).
  constexpr uint64_t kBit = NETQOS_CLASS_GEN_BIT;
  const uint64_t next = std::max<uint64_t>((old & ~kBit) + 1, clock_ns) | kBit;
  const uint32_t key = NETQOS_CLASS_GEN_SLOT;
  if (int err = bpf_map_update_elem(fd, &key, &next, BPF_ANY); err) {
    return ErrnoStatus(std::string("bpf_map_update_elem(") + kWhere + ")", err);
  }
  return Status::Ok();
}

}  // namespace netqos::bpf
