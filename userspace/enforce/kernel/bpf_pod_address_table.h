// PodAddressTable over the pinned BPF pod address map (bpf::Dataplane).
#pragma once

#include "bpf/dataplane.h"
#include "enforce/pod_address_table.h"

namespace netqos::enforce {

class BpfPodAddressTable : public PodAddressTable {
 public:
  explicit BpfPodAddressTable(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<PodAddress, uint64_t>> List() const override;
  Status Set(const PodAddress& address, uint64_t cgroup_id) override;
  Status Clear(const PodAddress& address) override;

 private:
  bpf::Dataplane& dataplane_;
};

}  // namespace netqos::enforce
