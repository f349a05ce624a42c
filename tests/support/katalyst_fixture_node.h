// The node of Katalyst's policy_test.go (the staticpolicy package, v0.5.3 and HEAD), as netqos's
// core types: four NUMA nodes on two sockets; eth0 in the host namespace, a disabled eth1, eth2
// in netns "ns2". With the policy flags Katalyst's tests use. Free of Catch2: the policy tests,
// the gRPC tests and the fuzz targets share it.
#pragma once

#include "core/constants.h"
#include "core/policy.h"

namespace netqos::testing {

// `has_nics` false disables eth0 and eth2 too (Katalyst's "no available NICs" cases).
inline core::Topology FixtureTopology(bool has_nics = true) {
  core::Topology t;
  t.numa_nodes = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  core::Nic eth0;
  eth0.id = {"", "eth0"};
  eth0.ifindex = 0;
  eth0.speed_mbps = 25000;
  eth0.numa_node = 0;
  eth0.enabled = has_nics;
  eth0.ipv4 = {"1.1.1.1"};
  core::Nic eth1;
  eth1.id = {"", "eth1"};
  eth1.ifindex = 1;
  eth1.speed_mbps = 25000;
  eth1.numa_node = 1;
  eth1.enabled = false;
  core::Nic eth2;
  eth2.id = {"ns2", "eth2"};
  eth2.ifindex = 2;
  eth2.speed_mbps = 25000;
  eth2.numa_node = 2;
  eth2.enabled = has_nics;
  eth2.ipv6 = {"::ffff:192.0.2.1"};
  eth2.netns_path = "/var/run/ns2";
  t.nics = {eth0, eth1, eth2};
  return t;
}

inline core::PolicyConfig FixtureConfig() {
  core::PolicyConfig c;
  c.reserved_bandwidth = 4000;
  c.egress_capacity_rate = 0.9f;
  c.ingress_capacity_rate = 0.85f;
  c.qos_class_ids = {{core::kSharedCores, 22345},
                     {core::kReclaimedCores, 22346},
                     {core::kDedicatedCores, 22347}};
  return c;
}

}  // namespace netqos::testing
