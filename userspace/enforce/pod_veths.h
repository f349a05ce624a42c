// Which veth is which pod's: the host ends of pods' veths, where netqos classifies a pod behind a
// CNI before the node masquerades, tunnels or DNATs its packets (bpf/netqos_pod.bpf.c). Pure
// planning from what the kernel adapter found (VethLink, the node's routes) and the pod list.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "enforce/desired_state.h"
#include "enforce/pod_address_table.h"
#include "enforce/problem_log.h"
#include "pods/pod_list.h"

namespace netqos::enforce {

// The host end of a veth whose other end is in another network namespace.
struct VethLink {
  int ifindex = 0;
  std::string name;
  int peer_netnsid = -1;                   // the other end's namespace, as the host numbers it
  std::vector<PodAddress> peer_addresses;  // what the other end's namespace holds
  bool operator==(const VethLink&) const = default;
};

// A route of the node's main table: addresses within prefix/length leave by ifindex.
struct NodeRoute {
  PodAddress prefix{};  // IPv4 as ::ffff:a.b.c.d, with length counted from the IPv4 bits + 96
  int length = 0;       // 0..128
  int ifindex = 0;
  bool operator==(const NodeRoute&) const = default;
};

struct PodVeth {
  std::string pod_uid;
  std::string pod_name;    // "<ns>/<name>", for messages
  uint64_t cgroup_id = 0;  // the container whose class the pod's routed traffic takes
  // The NIC whose IFB shapes what the pod receives (the pod's leaf's NIC, else the first
  // enforced NIC of the veth's namespace); nullopt: nothing to redirect to.
  std::optional<core::NicId> home;
  bool operator==(const PodVeth&) const = default;
};

struct PodVethPlan {
  std::map<int, PodVeth> veths;            // host-end ifindex -> its pod
  std::map<uint64_t, int> container_veth;  // cgroup id of each container of those pods -> veth
  std::vector<Problem> problems;
  // Pods with addresses of their own that have no veth here (none found yet, or not one alone).
  size_t unplaced = 0;
};

// The veth of each pod with its own network namespace (not hostNetwork, not finished, with
// classified containers in `classes` and addresses): the veth the node routes one of its
// addresses to (the CNI's route, which the pod cannot change), else the one veth whose other end
// holds all of its addresses. A pod two veths claim, or a veth two pods claim, is left out and
// reported: its packets are classified by their sockets and addresses only. `enforced`: the
// enforced NICs of the veths' namespace, in order (the home of a pod without a leaf is the
// first).
PodVethPlan PlanPodVeths(const std::vector<pods::PodInfo>& pods,
                         const std::map<uint64_t, DesiredContainer>& classes,
                         const std::vector<VethLink>& veths, const std::vector<NodeRoute>& routes,
                         const std::vector<core::NicId>& enforced);

// The route the node would take to `address`: the longest prefix that holds it; nullopt when
// none does.
std::optional<NodeRoute> BestRoute(const std::vector<NodeRoute>& routes, const PodAddress& address);

// Node-wide carrier slots (1..kCarrierSlots-1, NETQOS_CARRIER_SLOTS), one per container of a pod
// behind a veth. A container keeps its slot for as long as it has one: a restarted daemon adopts
// the slots the class map holds, so no packet in flight changes class.
inline constexpr uint32_t kCarrierSlots = 32768;
class SlotAllocator {
 public:
  // Takes `slot` for `cgroup_id` when it is free (what the class map held); false otherwise.
  bool Adopt(uint64_t cgroup_id, uint16_t slot);
  // The container's slot, a free one the first time; 0 when all are taken.
  uint16_t Acquire(uint64_t cgroup_id);
  // Frees the slots of every container not in `keep`; returns the freed slots.
  std::vector<uint16_t> ReleaseExcept(const std::set<uint64_t>& keep);
  const std::map<uint64_t, uint16_t>& slots() const { return by_cgroup_; }

 private:
  std::map<uint64_t, uint16_t> by_cgroup_;
  std::set<uint16_t> used_;
  uint16_t next_ = 1;
};

}  // namespace netqos::enforce
