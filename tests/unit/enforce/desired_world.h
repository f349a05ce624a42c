// The inputs of ComputeDesiredState for the enforce unit tests: one enforced 1000 Mbit/s NIC
// (eth0) and one that is not (eth1), allocations, observed containers and the state a pass carries
// to the next (leaf minors, the bandwidth annotations each pod was enforced with).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/types.h"
#include "enforce/desired_state.h"
#include "shaping/htb_plan.h"
#include "support/observed_container.h"

namespace netqos::testing {

inline const core::NicId kEth0{"", "eth0"};  // enforced
inline const core::NicId kEth1{"", "eth1"};  // not enforced

inline core::AllocationInfo Alloc(const std::string& level, const core::NicId& nic, uint32_t egress,
                                  uint32_t ingress) {
  core::AllocationInfo a;
  a.qos_level = level;
  a.if_name = nic.name;
  a.ns_name = nic.netns;
  a.egress = egress;
  a.ingress = ingress;
  return a;
}

// A tenant policy under which a pod without an allocation may claim any QoS level (the built-in
// one holds it to the unclassified level).
inline std::shared_ptr<const enforce::TenantPolicy> AnyLevelPolicy() {
  auto p = std::make_shared<enforce::TenantPolicy>();
  p->defaults.max_unallocated_level = shaping::QosLevel::kSystem;
  return p;
}

// Everything ComputeDesiredState reads, with one enforced 1000 Mbps NIC (eth0).
struct World {
  core::PolicyConfig policy;
  core::PodEntries allocations;
  std::vector<enforce::ObservedContainer> containers;
  std::vector<enforce::EnforcedLink> enforced{{kEth0, 1000}};
  std::map<uint64_t, uint32_t> current;
  enforce::DesiredOptions options{true};
  shaping::MinorAllocator minors;

  enforce::AnnotatedByPod annotated;  // carried from pass to pass, as the enforcer does

  enforce::DesiredState Compute() {
    enforce::DesiredState s = ComputeDesiredState(policy, allocations, containers, enforced,
                                                  current, options, minors, annotated);
    annotated = s.annotated;
    return s;
  }
};

}  // namespace netqos::testing
