#include "enforce/kernel/bpf_class_table.h"

static_assert(netqos::enforce::kClassIngressShaped == NETQOS_CLASS_F_INGRESS_SHAPED);

namespace netqos::enforce {

Result<std::map<uint64_t, ClassEntry>> BpfClassTable::List() const {
  auto list = dataplane_.ListClasses();
  if (!list.ok()) return list.status();
  std::map<uint64_t, ClassEntry> out;
  for (const auto& [id, cls] : *list) {
    out[id] = ClassEntry{cls.priority, cls.net_class_id, cls.qos_level, cls.flags};
  }
  return out;
}

Status BpfClassTable::Set(uint64_t cgroup_id, const ClassEntry& entry) {
  netqos_class cls{};
  cls.priority = entry.priority;
  cls.net_class_id = entry.net_class_id;
  cls.qos_level = entry.qos_level;
  cls.flags = entry.flags;
  return dataplane_.SetClass(cgroup_id, cls);
}

Status BpfClassTable::Clear(uint64_t cgroup_id) {
  NETQOS_RETURN_IF_ERROR(dataplane_.ClearClass(cgroup_id));
  return dataplane_.DeleteContainerCounters(cgroup_id);
}

}  // namespace netqos::enforce
