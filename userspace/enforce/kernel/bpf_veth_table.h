// VethTable over the pinned BPF veth and carrier maps (bpf::Dataplane).
#pragma once

#include "bpf/dataplane.h"
#include "enforce/veth_ports.h"

namespace netqos::enforce {

class BpfVethTable : public VethTable {
 public:
  explicit BpfVethTable(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<int, uint64_t>> ListVeths() const override;
  Status SetVeth(int ifindex, uint64_t cgroup_id) override;
  Status ClearVeth(int ifindex) override;
  Result<std::map<uint16_t, uint64_t>> ListCarriers() const override;
  Status SetCarrier(uint16_t slot, uint64_t cgroup_id) override;
  Status ClearCarrier(uint16_t slot) override;

 private:
  bpf::Dataplane& dataplane_;
};

}  // namespace netqos::enforce
