// The ports through which the reconciler classifies pods at their veths (veth_sync.h): what the
// node's links and routes are (read), the veth and carrier maps (bpf/netqos_abi.h
// NETQOS_MAP_VETH, NETQOS_MAP_CARRIER), and the tc programs on each veth. Kernel adapters in
// enforce/kernel; unit tests use in-memory ones.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/status.h"
#include "enforce/pod_veths.h"

namespace netqos::enforce {

// The host's side of the node's pod networking, in the namespace netqosd runs in.
class VethSource {
 public:
  virtual ~VethSource() = default;
  // Every veth whose other end is in another namespace, with the addresses found there.
  virtual Result<std::vector<VethLink>> Veths() = 0;
  // The main routing table's unicast routes with one outgoing device.
  virtual Result<std::vector<NodeRoute>> Routes() = 0;
};

class VethTable {
 public:
  virtual ~VethTable() = default;
  virtual Result<std::map<int, uint64_t>> ListVeths() const = 0;  // ifindex -> cgroup id
  virtual Status SetVeth(int ifindex, uint64_t cgroup_id) = 0;
  virtual Status ClearVeth(int ifindex) = 0;                              // a missing one is fine
  virtual Result<std::map<uint16_t, uint64_t>> ListCarriers() const = 0;  // slot -> cgroup id
  virtual Status SetCarrier(uint16_t slot, uint64_t cgroup_id) = 0;
  virtual Status ClearCarrier(uint16_t slot) = 0;
};

class VethAttacher {
 public:
  virtual ~VethAttacher() = default;
  // Puts the veth programs on the veth, what the pod receives redirected to the IFB of the NIC
  // with ifindex `home_nic` (0: no redirect).
  virtual Status Attach(int veth, int home_nic) = 0;
  virtual Status Detach(int veth) = 0;  // Ok when the veth is gone
};

}  // namespace netqos::enforce
