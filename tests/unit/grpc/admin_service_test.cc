// AdminService translation from an AllocationService::View and an EnforcementReport, without a
// server.
#include "grpc/admin_service.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/version.h"
#include "unit/grpc/fake_enforcement_view.h"
#include "unit/grpc/service_fixture.h"

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

// ---------------------------------------------------------------------------------------------
// GetStatus and ListClasses: the enforcement report translated, also without one.

namespace netqos::grpcadapter {

TEST_CASE("GetStatus counts allocations and reports NIC health", "[grpc][admin]") {
  const service::EnforcementReport report = testing::SampleEnforcementReport();
  ::netqos::admin::v1::GetStatusResponse out;
  FillStatus(TwoSocketView(), &report, &out);
  CHECK(out.pods() == 2);
  CHECK(out.containers() == 3);
  CHECK(out.allocated_egress_mbps() == 2500);
  CHECK(out.allocated_ingress_mbps() == 2500);
  CHECK(out.nics_total() == 2);
  CHECK(out.nics_healthy() == 1);
  REQUIRE(out.nics_size() == 2);
  CHECK(out.nics(0).nic() == "eth0");
  CHECK(out.nics(0).healthy());
  CHECK(out.nics(0).shaped());
  CHECK(out.nics(1).nic() == "ns2-eth2");
  CHECK_FALSE(out.nics(1).healthy());
  CHECK(out.nics(1).unhealthy_reason() == "no IP address");
  CHECK_FALSE(out.nics(1).shaped());

  const auto& e = out.enforcement();
  CHECK(e.mode() == "bpf");
  CHECK(e.pin_dir() == "/sys/fs/bpf/netqos-test");
  CHECK(e.cgroup_root() == "/sys/fs/cgroup");
  CHECK(e.pods_known());
  CHECK(e.passes() == 42);
  CHECK(e.pod_list_failures() == 1);
  CHECK(e.problem_reports_total() == 3);
  REQUIRE(e.shaped_nics_size() == 1);
  CHECK(e.shaped_nics(0) == "eth0");
  REQUIRE(e.problems_size() == 1);
  CHECK(e.problems(0).object() == "nic:ns2-eth2");
  CHECK(e.problems(0).message() == "no known speed");
  CHECK(e.problems(0).times_seen() == 2);
  CHECK(e.classified_containers() == 2);
}

TEST_CASE("GetStatus without an enforcement view reports mode none", "[grpc][admin]") {
  ::netqos::admin::v1::GetStatusResponse out;
  FillStatus(TwoSocketView(), nullptr, &out);
  CHECK(out.enforcement().mode() == "none");
  CHECK(out.containers() == 3);
  CHECK_FALSE(out.nics(0).shaped());
}

TEST_CASE("ListClasses translates every container and class with counters", "[grpc][admin]") {
  ::netqos::admin::v1::ListClassesResponse out;
  FillClasses(testing::SampleEnforcementReport(), &out);
  CHECK(out.mode() == "bpf");
  CHECK(out.pin_dir() == "/sys/fs/bpf/netqos-test");
  REQUIRE(out.containers_size() == 2);
  const auto& web = out.containers(0);
  CHECK(web.cgroup_id() == 4242);
  CHECK(web.pod_uid() == "u-web");
  CHECK(web.pod_namespace() == "shop");
  CHECK(web.pod_name() == "web");
  CHECK(web.container() == "app");
  CHECK(web.qos_level() == "shared_cores");
  CHECK(web.net_class_id() == 7);
  CHECK(web.priority() == 0x100100);
  CHECK(web.htb_class() == "10:100");
  CHECK(web.capped());
  CHECK(web.nic() == "eth0");
  CHECK(web.allocated_mbps() == 100);
  CHECK(web.counters().tx_bytes() == 1000000);
  CHECK(web.counters().tx_packets() == 700);
  CHECK(web.counters().rx_bytes() == 2000);
  CHECK(web.counters().rx_packets() == 30);
  CHECK(web.counters().drops() == 1);
  CHECK(out.queue_counters());
  REQUIRE(web.has_egress_queue());
  CHECK(web.egress_queue().device() == "eth0");
  CHECK(web.egress_queue().htb_class() == "10:100");
  CHECK(web.egress_queue().counters().bytes() == 990000);
  CHECK(web.egress_queue().counters().packets() == 690);
  CHECK(web.egress_queue().counters().drops() == 1);
  CHECK(web.egress_queue().counters().overlimits() == 55);
  CHECK(web.egress_queue().counters().backlog_bytes() == 1514);
  CHECK(web.egress_queue().counters().backlog_packets() == 1);
  CHECK(web.egress_queue().error().empty());
  CHECK_FALSE(web.has_ingress_queue());  // no ingress leaf of its own
  CHECK_FALSE(out.containers(1).capped());
  CHECK_FALSE(out.containers(1).has_egress_queue());
  CHECK(out.containers(1).htb_class() == "10:31");
  REQUIRE(out.classes_size() == 1);
  CHECK(out.classes(0).net_class_id() == 7);
  CHECK(out.classes(0).counters().tx_bytes() == 1000500);
  CHECK(out.classes(0).egress_queue().drops() == 1);
  CHECK(out.classes(0).ingress_queue().drops() == 0);
}

TEST_CASE("Admin RPC handlers: version, pid, sockets, counters only when asked", "[grpc][admin]") {
  testing::ServedStack unused;  // only for a real AllocationService
  testing::FakeEnforcementView view(testing::SampleEnforcementReport());
  RegistrationHealth registration;
  registration.phase = RegistrationPhase::kRejected;
  registration.error = "plugin name conflict";
  registration.seconds_since_get_info = 12.5;
  registration.get_info_calls = 3;
  AdminService admin(unused.service(),
                     {"file /etc/topo.json", &view, {"/run/a/", "/run/b"}, [&registration] {
                        return registration;
                      }});

  ::netqos::admin::v1::GetStatusResponse status;
  REQUIRE(admin.GetStatus(nullptr, nullptr, &status).ok());
  CHECK(status.version() == Version());
  CHECK(status.pid() == ::getpid());
  CHECK(status.uptime_seconds() >= 0);
  CHECK(status.uptime_seconds() < 60);
  REQUIRE(status.socket_paths_size() == 2);
  CHECK(status.socket_paths(0) == "/run/a/qrm_network_plugin_static.sock");
  CHECK(status.socket_paths(1) == "/run/b/qrm_network_plugin_static.sock");
  CHECK(status.topology_source() == "file /etc/topo.json");
  CHECK(status.enforcement().mode() == "bpf");
  CHECK(view.counter_reads() == 0);  // status never reads the per-CPU maps
  REQUIRE(status.has_kubelet_registration());
  CHECK(status.kubelet_registration().state() == "rejected");
  CHECK(status.kubelet_registration().error() == "plugin name conflict");
  CHECK(status.kubelet_registration().seconds_since_get_info() == 12.5);
  CHECK(status.kubelet_registration().get_info_calls() == 3);

  ::netqos::admin::v1::ListClassesRequest names_only;
  names_only.set_without_counters(true);
  ::netqos::admin::v1::ListClassesResponse classes;
  REQUIRE(admin.ListClasses(nullptr, &names_only, &classes).ok());
  CHECK(classes.containers_size() == 2);
  CHECK(classes.containers(0).counters().tx_bytes() == 0);
  CHECK_FALSE(classes.queue_counters());
  CHECK_FALSE(classes.containers(0).has_egress_queue());
  CHECK(view.counter_reads() == 0);

  classes.Clear();
  ::netqos::admin::v1::ListClassesRequest with_counters;
  REQUIRE(admin.ListClasses(nullptr, &with_counters, &classes).ok());
  CHECK(classes.containers(0).counters().tx_bytes() == 1000000);
  CHECK(view.counter_reads() == 1);

  AdminService bare(unused.service());
  classes.Clear();
  REQUIRE(bare.ListClasses(nullptr, &with_counters, &classes).ok());
  CHECK(classes.mode() == "none");
  CHECK(classes.containers().empty());
  status.Clear();
  REQUIRE(bare.GetStatus(nullptr, nullptr, &status).ok());
  CHECK(status.enforcement().mode() == "none");
  CHECK(status.socket_paths().empty());
  CHECK_FALSE(status.has_kubelet_registration());
}

}  // namespace netqos::grpcadapter
