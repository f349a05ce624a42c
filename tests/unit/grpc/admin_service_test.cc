// AdminService translation from an AllocationService::View, without a server.
#include "grpc/admin_service.h"

#include <catch2/catch.hpp>

namespace netqos::grpcadapter {
namespace {

service::AllocationService::View TwoSocketView() {
  service::AllocationService::View v;
  v.numa_nodes = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  core::Nic eth0;
  eth0.id = {"", "eth0"};
  eth0.speed_mbps = 25000;
  eth0.numa_node = -1;  // unknown: counts as NUMA 0, socket 0
  core::Nic eth2;
  eth2.id = {"ns2", "eth2"};
  eth2.speed_mbps = 10000;
  eth2.numa_node = 3;
  eth2.healthy = false;
  eth2.unhealthy_reason = "no IP address";
  v.nics = {eth0, eth2};
  core::NicState st;
  st.egress = {23500, 100, 4000, 19400, 1500, 17900};
  st.ingress = {22500, 0, 4000, 18500, 1500, 17000};
  v.machine_state[eth0.id] = st;

  core::AllocationInfo a;
  a.pod_uid = "u1";
  a.pod_namespace = "ns";
  a.pod_name = "p1";
  a.container_name = "main";
  a.container_type = "MAIN";
  a.egress = a.ingress = 1000;
  a.if_name = "eth0";
  a.numa_nodes = {0, 1};
  a.qos_level = "shared_cores";
  a.net_class_id = "7";
  core::AllocationInfo b = a;
  b.container_name = "side";
  b.egress = b.ingress = 500;
  core::AllocationInfo c = a;
  c.pod_uid = "u2";
  c.container_name = "";
  c.container_type = "POD";
  c.if_name = "eth2";
  c.ns_name = "ns2";
  c.numa_nodes = {2, 3};
  v.pod_entries["u1"] = {{"main", a}, {"side", b}};
  v.pod_entries["u2"] = {{"", c}};
  return v;
}

}  // namespace

TEST_CASE("ListAllocations lists every container entry", "[grpc][admin]") {
  ::netqos::admin::v1::ListAllocationsResponse out;
  FillAllocations(TwoSocketView(), &out);
  REQUIRE(out.allocations_size() == 3);
  const auto& a = out.allocations(0);
  CHECK(a.pod_uid() == "u1");
  CHECK(a.pod_namespace() == "ns");
  CHECK(a.pod_name() == "p1");
  CHECK(a.container_name() == "main");
  CHECK(a.container_type() == "MAIN");
  CHECK(a.qos_level() == "shared_cores");
  CHECK(a.nic() == "eth0");
  CHECK(a.netns().empty());
  CHECK(a.if_name() == "eth0");
  CHECK(a.egress_mbps() == 1000);
  CHECK(a.ingress_mbps() == 1000);
  CHECK(a.numa_nodes() == "0-1");
  CHECK(a.net_class_id() == "7");
  const auto& pod = out.allocations(2);
  CHECK(pod.container_type() == "POD");
  CHECK(pod.nic() == "ns2-eth2");
  CHECK(pod.netns() == "ns2");
  CHECK(pod.numa_nodes() == "2-3");
}

TEST_CASE("GetCapacity reports NICs with socket, health and bandwidth", "[grpc][admin]") {
  ::netqos::admin::v1::GetCapacityResponse out;
  FillCapacity(TwoSocketView(), &out);
  REQUIRE(out.nics_size() == 2);
  const auto& eth0 = out.nics(0);
  CHECK(eth0.nic() == "eth0");
  CHECK(eth0.name() == "eth0");
  CHECK(eth0.speed_mbps() == 25000);
  CHECK(eth0.numa_node() == -1);
  CHECK(eth0.socket() == 0);
  CHECK(eth0.healthy());
  CHECK(eth0.containers() == 2);
  CHECK(eth0.egress().capacity() == 23500);
  CHECK(eth0.egress().reservation() == 4100);  // system + configured reservation
  CHECK(eth0.egress().allocatable() == 19400);
  CHECK(eth0.egress().allocated() == 1500);
  CHECK(eth0.egress().free() == 17900);
  CHECK(eth0.ingress().capacity() == 22500);
  CHECK(eth0.ingress().free() == 17000);

  const auto& eth2 = out.nics(1);
  CHECK(eth2.nic() == "ns2-eth2");
  CHECK(eth2.netns() == "ns2");
  CHECK(eth2.socket() == 1);
  CHECK_FALSE(eth2.healthy());
  CHECK(eth2.unhealthy_reason() == "no IP address");
  CHECK(eth2.containers() == 1);
  CHECK_FALSE(eth2.has_egress());  // no machine-state entry
}

}  // namespace netqos::grpcadapter
