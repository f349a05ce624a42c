#include "enforce/kernel/bpf_veth_table.h"

static_assert(netqos::enforce::kCarrierSlots == NETQOS_CARRIER_SLOTS);

namespace netqos::enforce {

namespace {

// The dataplane's list as a map keyed the port's way.
template <typename K, typename Raw>
Result<std::map<K, uint64_t>> Keyed(Result<std::vector<std::pair<Raw, uint64_t>>> list) {
  if (!list.ok()) return list.status();
  std::map<K, uint64_t> out;
  for (const auto& [key, id] : *list) out[static_cast<K>(key)] = id;
  return out;
}

}  // namespace

Result<std::map<int, uint64_t>> BpfVethTable::ListVeths() const {
  return Keyed<int>(dataplane_.ListVeths());
}

Status BpfVethTable::SetVeth(int ifindex, uint64_t cgroup_id) {
  return dataplane_.SetVeth(static_cast<uint32_t>(ifindex), cgroup_id);
}

Status BpfVethTable::ClearVeth(int ifindex) {
  return dataplane_.ClearVeth(static_cast<uint32_t>(ifindex));
}

Result<std::map<uint16_t, uint64_t>> BpfVethTable::ListCarriers() const {
  return Keyed<uint16_t>(dataplane_.ListCarriers());
}

Status BpfVethTable::SetCarrier(uint16_t slot, uint64_t cgroup_id) {
  return dataplane_.SetCarrier(slot, cgroup_id);
}

Status BpfVethTable::ClearCarrier(uint16_t slot) { return dataplane_.ClearCarrier(slot); }

}  // namespace netqos::enforce
