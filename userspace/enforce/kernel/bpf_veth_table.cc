#include "enforce/kernel/bpf_veth_table.h"

static_assert(netqos::enforce::kCarrierSlots == NETQOS_CARRIER_SLOTS);

namespace netqos::enforce {

Result<std::map<int, uint64_t>> BpfVethTable::ListVeths() const {
  NETQOS_ASSIGN_OR_RETURN(auto list, dataplane_.ListVeths());
  std::map<int, uint64_t> out;
  for (const auto& [ifindex, id] : list) out[static_cast<int>(ifindex)] = id;
  return out;
}

Status BpfVethTable::SetVeth(int ifindex, uint64_t cgroup_id) {
  return dataplane_.SetVeth(static_cast<uint32_t>(ifindex), cgroup_id);
}

Status BpfVethTable::ClearVeth(int ifindex) {
  return dataplane_.ClearVeth(static_cast<uint32_t>(ifindex));
}

Result<std::map<uint16_t, uint64_t>> BpfVethTable::ListCarriers() const {
  NETQOS_ASSIGN_OR_RETURN(auto list, dataplane_.ListCarriers());
  std::map<uint16_t, uint64_t> out;
  for (const auto& [slot, id] : list) out[static_cast<uint16_t>(slot)] = id;
  return out;
}

Status BpfVethTable::SetCarrier(uint16_t slot, uint64_t cgroup_id) {
  return dataplane_.SetCarrier(slot, cgroup_id);
}

Status BpfVethTable::ClearCarrier(uint16_t slot) { return dataplane_.ClearCarrier(slot); }

}  // namespace netqos::enforce
