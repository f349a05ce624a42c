// The pod address -> cgroup map as the reconciler sees it (bpf/netqos_abi.h NETQOS_MAP_POD_ADDR).
// The BPF map adapter implements it; unit tests use an in-memory one.
#pragma once

#include <array>
#include <cstdint>
#include <map>

#include "common/status.h"

namespace netqos::enforce {

// An IPv6 address, or an IPv4 one as ::ffff:a.b.c.d, in network byte order (the map's key).
using PodAddress = std::array<uint8_t, 16>;

class PodAddressTable {
 public:
  virtual ~PodAddressTable() = default;
  virtual Result<std::map<PodAddress, uint64_t>> List() const = 0;
  virtual Status Set(const PodAddress& address, uint64_t cgroup_id) = 0;
  virtual Status Clear(const PodAddress& address) = 0;  // a missing entry is not an error
};

}  // namespace netqos::enforce
