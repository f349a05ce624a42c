#include "enforce/kernel/bpf_pod_address_table.h"

#include <cstring>

namespace netqos::enforce {
namespace {

static_assert(sizeof(netqos_addr) == sizeof(PodAddress));

netqos_addr ToKey(const PodAddress& a) {
  netqos_addr key{};
  std::memcpy(&key, a.data(), sizeof(key));
  return key;
}

}  // namespace

Result<std::map<PodAddress, uint64_t>> BpfPodAddressTable::List() const {
  auto list = dataplane_.ListPodAddresses();
  if (!list.ok()) return list.status();
  std::map<PodAddress, uint64_t> out;
  for (const auto& [key, cgroup_id] : *list) {
    PodAddress a{};
    std::memcpy(a.data(), &key, sizeof(key));
    out[a] = cgroup_id;
  }
  return out;
}

Status BpfPodAddressTable::Set(const PodAddress& address, uint64_t cgroup_id) {
  return dataplane_.SetPodAddress(ToKey(address), cgroup_id);
}

Status BpfPodAddressTable::Clear(const PodAddress& address) {
  return dataplane_.ClearPodAddress(ToKey(address));
}

}  // namespace netqos::enforce
