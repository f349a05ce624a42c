// The node's veths and routes through rtnetlink, in the calling thread's network namespace (the
// host's): every veth whose other end is in another namespace, with the addresses of that
// namespace, read without entering it (RTM_GETADDR with IFA_TARGET_NETNSID, kernel 4.20+), and
// the main table's routes. No /proc, no setns: what a CNI left on the host side is enough.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "enforce/veth_ports.h"

namespace netqos::enforce {

class NetlinkVethSource : public VethSource {
 public:
  Result<std::vector<VethLink>> Veths() override;
  Result<std::vector<NodeRoute>> Routes() override;

 private:
  // The addresses of each veth's other namespace, by (ifindex, netnsid): read once per veth (a
  // CNI sets them before the pod runs), never cached while empty (the CNI may not be done yet).
  std::map<std::pair<int, int>, std::vector<PodAddress>> peer_addresses_;
};

}  // namespace netqos::enforce
