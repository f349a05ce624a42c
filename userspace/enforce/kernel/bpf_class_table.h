// ClassTable over the pinned BPF class map (bpf::Dataplane).
#pragma once

#include "bpf/dataplane.h"
#include "enforce/class_table.h"

namespace netqos::enforce {

class BpfClassTable : public ClassTable {
 public:
  explicit BpfClassTable(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<uint64_t, ClassEntry>> List() const override;
  Status Set(uint64_t cgroup_id, const ClassEntry& entry) override;
  // Also drops the container's counters: cgroup ids are never reused, so nothing would ever
  // read them again, and the counter map would fill up with dead containers.
  Status Clear(uint64_t cgroup_id) override;

 private:
  bpf::Dataplane& dataplane_;
};

}  // namespace netqos::enforce
