// The node of Katalyst's policy_test.go (the staticpolicy package, v0.5.3 and HEAD), as netqos's
// core types: four NUMA nodes on two sockets; eth0 in the host namespace, a disabled eth1, eth2
// in netns "ns2". With the policy flags Katalyst's tests use. Free of Catch2: the policy tests,
// the gRPC tests and the fuzz targets share it.
#pragma once

#include <string>
#include <utility>

#include "core/constants.h"
#include "core/policy.h"

namespace netqos::testing {

inline core::Nic FixtureNic(std::string netns, std::string name, int ifindex, int numa_node,
                            bool enabled) {
  core::Nic nic;
  nic.id = {std::move(netns), std::move(name)};
  nic.ifindex = ifindex;
  nic.speed_mbps = 25000;
  nic.numa_node = numa_node;
  nic.enabled = enabled;
  return nic;
}

// `has_nics` false disables eth0 and eth2 too (Katalyst's "no available NICs" cases).
inline core::Topology FixtureTopology(bool has_nics = true) {
  core::Topology t;
  t.numa_nodes = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  core::Nic eth0 = FixtureNic("", "eth0", 0, 0, has_nics);
  eth0.ipv4 = {"1.1.1.1"};
  core::Nic eth2 = FixtureNic("ns2", "eth2", 2, 2, has_nics);
  eth2.ipv6 = {"::ffff:192.0.2.1"};
  eth2.netns_path = "/var/run/ns2";
  t.nics = {eth0, FixtureNic("", "eth1", 1, 1, false), eth2};
  return t;
}

inline core::PolicyConfig FixtureConfig() {
  core::PolicyConfig c;
  c.reserved_bandwidth = 4000;
  c.egress_capacity_rate = 0.9f;
  c.ingress_capacity_rate = 0.85f;
  c.qos_class_ids = {
      {core::kSharedCores, 22345}, {core::kReclaimedCores, 22346}, {core::kDedicatedCores, 22347}};
  return c;
}

}  // namespace netqos::testing
