#include "enforce/kernel/bpf_class_table.h"

#include "common/qos_level.h"

// A class entry's qos_level byte is the QosLevel's number (desired_state.cc writes it so), which
// the BPF programs read as enum netqos_qos_level.
static_assert(static_cast<int>(netqos::QosLevel::kSystem) == NETQOS_QOS_SYSTEM);
static_assert(static_cast<int>(netqos::QosLevel::kDedicated) == NETQOS_QOS_DEDICATED);
static_assert(static_cast<int>(netqos::QosLevel::kShared) == NETQOS_QOS_SHARED);
static_assert(static_cast<int>(netqos::QosLevel::kReclaimed) == NETQOS_QOS_RECLAIMED);
static_assert(netqos::kQosLevelCount == 4 && NETQOS_QOS_UNKNOWN >= netqos::kQosLevelCount);
static_assert(netqos::enforce::kClassIngressShaped == NETQOS_CLASS_F_INGRESS_SHAPED);
static_assert(netqos::enforce::kClassVeth == NETQOS_CLASS_F_VETH);
static_assert(netqos::enforce::kClassAggregate == NETQOS_CLASS_F_AGGREGATE);
static_assert(netqos::enforce::kClassNoLeaf == NETQOS_CLASS_F_NO_LEAF);
static_assert(((netqos::enforce::kClassIngressShaped | netqos::enforce::kClassVeth |
                netqos::enforce::kClassAggregate | netqos::enforce::kClassNoLeaf) &
               NETQOS_CLASS_F_SET_DSCP) == 0);

namespace netqos::enforce {

Result<std::map<uint64_t, ClassEntry>> BpfClassTable::List() const {
  auto list = dataplane_.ListClasses();
  if (!list.ok()) return list.status();
  std::map<uint64_t, ClassEntry> out;
  for (const auto& [id, cls] : *list) {
    ClassEntry e{cls.priority, cls.net_class_id, cls.qos_level, cls.flags, cls.slot};
    // The DSCP flag is ClassEntry::dscp's, not one of ClassEntry::flags.
    e.flags &= ~NETQOS_CLASS_F_SET_DSCP;
    if ((cls.flags & NETQOS_CLASS_F_SET_DSCP) != 0) e.dscp = cls.dscp;
    out[id] = e;
  }
  return out;
}

Status BpfClassTable::Set(uint64_t cgroup_id, const ClassEntry& entry) {
  netqos_class cls{};
  cls.priority = entry.priority;
  cls.net_class_id = entry.net_class_id;
  cls.qos_level = entry.qos_level;
  cls.flags = entry.flags;
  cls.slot = entry.slot;
  if (entry.dscp) {
    cls.dscp = *entry.dscp;
    cls.flags |= NETQOS_CLASS_F_SET_DSCP;
  }
  return dataplane_.SetClass(cgroup_id, cls);
}

Status BpfClassTable::Clear(uint64_t cgroup_id) {
  NETQOS_RETURN_IF_ERROR(dataplane_.ClearClass(cgroup_id));
  return dataplane_.DeleteContainerCounters(cgroup_id);
}

}  // namespace netqos::enforce
