// The kubelet's conversation with the real netqosd, over its unix socket, using stubs built from
// the upstream-shaped schema. Expected values are those of Katalyst v0.5.3's policy_test.go
// (staticpolicy), per test.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "e2e/kubelet_harness.h"
#include "support/wire.h"

using namespace netqos::e2e;

namespace {

rp::ResourceHintsResponse Hints(Harness& h, const rp::ResourceRequest& req) {
  rp::ResourceHintsResponse resp;
  grpc::ClientContext ctx;
  auto st = h.Plugin()->GetTopologyHints(&ctx, req, &resp);
  INFO(st.error_message());
  REQUIRE(st.ok());
  return resp;
}

}  // namespace

TEST_CASE("e2e: plugin-watcher registration and options") {
  Harness h;
  h.Start();
  reg::PluginInfo info;
  REQUIRE(h.GetInfo(&info).ok());
  CHECK(info.type() == "ResourcePlugin");
  CHECK(info.name() == kResource);
  CHECK(info.endpoint().empty());
  REQUIRE(info.supported_versions_size() == 1);
  CHECK(info.supported_versions(0) == "v1alpha1");

  auto reg_stub = reg::Registration::NewStub(h.Channel());
  for (bool ok : {false, true}) {
    grpc::ClientContext ctx;
    reg::RegistrationStatus status;
    status.set_plugin_registered(ok);
    if (!ok) status.set_error("kubelet says no");
    reg::RegistrationStatusResponse resp;
    CHECK(reg_stub->NotifyRegistrationStatus(&ctx, status, &resp).ok());
  }

  grpc::ClientContext ctx;
  rp::Empty empty;
  rp::ResourcePluginOptions opts;
  REQUIRE(h.Plugin()->GetResourcePluginOptions(&ctx, empty, &opts).ok());
  CHECK_FALSE(opts.pre_start_required());
  CHECK(opts.with_topology_alignment());
  CHECK_FALSE(opts.need_reconcile());

  grpc::ClientContext ctx2;
  rp::PreStartContainerRequest pre;
  pre.set_pod_uid("u");
  pre.set_container_name("c");
  rp::PreStartContainerResponse pre_resp;
  CHECK(h.Plugin()->PreStartContainer(&ctx2, pre, &pre_resp).ok());

  grpc::ClientContext ctx3;
  rp::GetResourcesAllocationResponse all;
  CHECK(h.Plugin()->GetResourcesAllocation(&ctx3, rp::GetResourcesAllocationRequest(), &all).ok());
  CHECK(all.pod_resources().empty());

  // The socket is private to root (the kubelet).
  struct stat st {};
  REQUIRE(::stat(h.socket_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("e2e: GetTopologyHints answers as TestGetTopologyHints (v0.5.3)") {
  Harness h;
  h.Start();

  SECTION("1: INIT container gets a nil hint list (key only on the wire)") {
    auto req = Req::Container("pod-1", rp::INIT, "shared_cores", 5000);
    std::string bytes;
    REQUIRE(h.RawCall("GetTopologyHints", req, &bytes).ok());
    auto entry = netqos::testing::FindMapEntry(bytes, 10, kResource);
    REQUIRE(entry.found);
    CHECK_FALSE(entry.value_present);
    rp::ResourceHintsResponse resp;
    REQUIRE(resp.ParseFromString(bytes));
    CHECK(resp.annotations().size() == 1);
    CHECK(resp.annotations().at(kQosKey) == "shared_cores");
    CHECK(resp.container_type() == rp::INIT);
  }
  SECTION("2: shared + host_ns_preferred") {
    auto req = Req::Container("pod-2", rp::MAIN, "shared_cores", 5000);
    (*req.mutable_annotations())[kClassKey] = "12345";
    Req::NamespaceType(&req, "host_ns_preferred");
    auto resp = Hints(h, req);
    CHECK(SortedHints(resp.resource_hints().at(kResource)) ==
          std::vector<HintTuple>{{{0, 1}, true}, {{0, 1, 2, 3}, false}, {{2, 3}, false}});
    CHECK(ToMap(resp.annotations()) ==
          std::map<std::string, std::string>{{kQosKey, "shared_cores"},
                                             {"namespace_type", "host_ns_preferred"}});
    CHECK(resp.labels().size() == 1);
    CHECK(resp.pod_uid() == "pod-2");
    CHECK(resp.pod_namespace() == "test");
    CHECK(resp.container_name() == "test");
    CHECK(resp.resource_name() == kResource);
  }
  SECTION("3: reclaimed + anti_host_ns_preferred") {
    auto req = Req::Container("pod-3", rp::MAIN, "reclaimed_cores", 5000);
    (*req.mutable_annotations())[kClassKey] = "12346";
    Req::NamespaceType(&req, "anti_host_ns_preferred");
    auto resp = Hints(h, req);
    CHECK(SortedHints(resp.resource_hints().at(kResource)) ==
          std::vector<HintTuple>{{{0, 1}, false}, {{0, 1, 2, 3}, false}, {{2, 3}, true}});
  }
  SECTION("4: dedicated + host_ns: no all-NUMA hint") {
    auto req = Req::Container("pod-4", rp::MAIN, "dedicated_cores", 5000);
    Req::NamespaceType(&req, "host_ns");
    auto resp = Hints(h, req);
    CHECK(SortedHints(resp.resource_hints().at(kResource)) ==
          std::vector<HintTuple>{{{0, 1}, true}});
    CHECK(resp.annotations().at("namespace_type") == "host_ns");
  }
  SECTION("5: 20000 Mbps does not fit eth0") {
    auto req = Req::Container("pod-5", rp::MAIN, "dedicated_cores", 20000);
    Req::NamespaceType(&req, "host_ns_preferred");
    auto resp = Hints(h, req);
    CHECK(SortedHints(resp.resource_hints().at(kResource)) ==
          std::vector<HintTuple>{{{0, 1, 2, 3}, false}, {{2, 3}, false}});
  }
  SECTION("6: nothing satisfies: an empty, non-nil list on the wire") {
    auto req = Req::Container("pod-6", rp::MAIN, "dedicated_cores", 20000);
    Req::NamespaceType(&req, "host_ns");
    std::string bytes;
    REQUIRE(h.RawCall("GetTopologyHints", req, &bytes).ok());
    auto entry = netqos::testing::FindMapEntry(bytes, 10, kResource);
    REQUIRE(entry.found);
    CHECK(entry.value_present);
    CHECK(entry.value_bytes.empty());
  }
}

TEST_CASE(
    "e2e: GetTopologyHints with no usable NIC is an empty list (TestGetTopologyHints case 7)") {
  Harness h(FixtureTopology(/*nics_enabled=*/false));
  h.Start();
  auto req = Req::Container("pod-7", rp::MAIN, "shared_cores", 5000);
  Req::NamespaceType(&req, "host_ns_preferred");
  std::string bytes;
  REQUIRE(h.RawCall("GetTopologyHints", req, &bytes).ok());
  auto entry = netqos::testing::FindMapEntry(bytes, 10, kResource);
  REQUIRE(entry.found);
  CHECK(entry.value_present);
  CHECK(entry.value_bytes.empty());

  grpc::ClientContext ctx;
  rp::GetTopologyAwareAllocatableResourcesResponse alloc;
  REQUIRE(h.Plugin()
              ->GetTopologyAwareAllocatableResources(
                  &ctx, rp::GetTopologyAwareAllocatableResourcesRequest(), &alloc)
              .ok());
  const auto& r = alloc.allocatable_resources().at(kResource);
  CHECK(r.aggregated_allocatable_quantity() == 0);
  CHECK(r.topology_aware_allocatable_quantity_list_size() == 0);
}

TEST_CASE("e2e: Allocate answers as TestAllocate (v0.5.3)") {
  Harness h;
  h.Start();
  auto plugin = h.Plugin();

  SECTION("1: INIT container: no allocation result") {
    auto req = Req::Container("a-1", rp::INIT, "shared_cores", 5000);
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    REQUIRE(plugin->Allocate(&ctx, req, &resp).ok());
    CHECK_FALSE(resp.has_allocation_result());
    CHECK(resp.container_type() == rp::INIT);
    CHECK(resp.resource_name() == kResource);
    CHECK(resp.annotations().at(kQosKey) == "shared_cores");
  }
  SECTION("2, 3, 4: fresh allocations report the chosen NIC") {
    struct Case {
      const char* uid;
      const char* qos;
      const char* class_id;
      const char* ns_type;
      std::vector<uint64_t> hint;
      const char* numa;
      std::map<std::string, std::string> ann;
    };
    const Case cases[] = {
        {"a-2",
         "shared_cores",
         "12345",
         "host_ns_preferred",
         {0, 1},
         "0-1",
         {{"qrm.katalyst.kubewharf.io/inet_addr", "1.1.1.1"},
          {"qrm.katalyst.kubewharf.io/inet_addr_ipv6", ""},
          {"qrm.katalyst.kubewharf.io/nic_name", "eth0"},
          {"qrm.katalyst.kubewharf.io/netcls_id", "12345"},
          {"qrm.katalyst.kubewharf.io/net_bandwidth", "5000"}}},
        {"a-3",
         "reclaimed_cores",
         "12346",
         "anti_host_ns_preferred",
         {2, 3},
         "2-3",
         {{"qrm.katalyst.kubewharf.io/inet_addr", ""},
          {"qrm.katalyst.kubewharf.io/inet_addr_ipv6", "192.0.2.1"},
          {"qrm.katalyst.kubewharf.io/netns_path", "/var/run/ns2"},
          {"qrm.katalyst.kubewharf.io/nic_name", "eth2"},
          {"qrm.katalyst.kubewharf.io/netcls_id", "12346"},
          {"qrm.katalyst.kubewharf.io/net_bandwidth", "5000"}}},
        {"a-4",
         "dedicated_cores",
         nullptr,
         "host_ns",
         {0, 1},
         "0-1",
         {{"qrm.katalyst.kubewharf.io/inet_addr", "1.1.1.1"},
          {"qrm.katalyst.kubewharf.io/inet_addr_ipv6", ""},
          {"qrm.katalyst.kubewharf.io/nic_name", "eth0"},
          {"qrm.katalyst.kubewharf.io/netcls_id", "22347"},
          {"qrm.katalyst.kubewharf.io/net_bandwidth", "5000"}}},
    };
    for (const auto& c : cases) {
      INFO(c.uid);
      auto req = Req::Container(c.uid, rp::MAIN, c.qos, 5000);
      if (c.class_id) (*req.mutable_annotations())[kClassKey] = c.class_id;
      Req::NamespaceType(&req, c.ns_type);
      Req::Hint(&req, c.hint, true);
      grpc::ClientContext ctx;
      rp::ResourceAllocationResponse resp;
      auto st = plugin->Allocate(&ctx, req, &resp);
      INFO(st.error_message());
      REQUIRE(st.ok());
      CHECK(resp.pod_uid() == c.uid);
      CHECK(resp.pod_namespace() == "test");
      CHECK(resp.container_name() == "test");
      CHECK(resp.resource_name() == kResource);
      CHECK(resp.labels().at(kQosKey) == c.qos);
      CHECK(resp.annotations().at("namespace_type") == c.ns_type);
      CHECK(resp.annotations().count(kClassKey) == 0);  // filtered out
      const auto& info = resp.allocation_result().resource_allocation().at(kResource);
      CHECK(info.is_node_resource());
      CHECK(info.is_scalar_resource());
      CHECK(info.allocated_quantity() == 5000);
      CHECK(info.allocation_result() == c.numa);
      CHECK(info.oci_property_name().empty());
      CHECK(std::map<std::string, std::string>(info.annotations().begin(),
                                               info.annotations().end()) == c.ann);
      REQUIRE(info.resource_hints().hints_size() == 1);
      CHECK(std::vector<uint64_t>(info.resource_hints().hints(0).nodes().begin(),
                                  info.resource_hints().hints(0).nodes().end()) == c.hint);
      CHECK(info.resource_hints().hints(0).preferred());
    }
  }
  SECTION("5, 6: 20000 Mbps fails with a clear error") {
    for (const char* ns_type : {"host_ns", "host_ns_preferred"}) {
      auto req = Req::Container(std::string("a-5-") + ns_type, rp::MAIN, "dedicated_cores", 20000);
      Req::NamespaceType(&req, ns_type);
      Req::Hint(&req, {0, 1}, true);
      grpc::ClientContext ctx;
      rp::ResourceAllocationResponse resp;
      auto st = plugin->Allocate(&ctx, req, &resp);
      CHECK_FALSE(st.ok());
      CHECK_THAT(st.error_message(), Catch::Contains("20000 Mbps"));
    }
  }
  SECTION("SIDECAR gets a zero, unstored allocation") {
    auto req = Req::Container("a-side", rp::SIDECAR, "shared_cores", 5000);
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    REQUIRE(plugin->Allocate(&ctx, req, &resp).ok());
    const auto& info = resp.allocation_result().resource_allocation().at(kResource);
    CHECK(info.allocated_quantity() == 0);
    CHECK(info.allocation_result().empty());
    CHECK(info.annotations().empty());
    grpc::ClientContext ctx2;
    rp::GetTopologyAwareResourcesRequest q;
    q.set_pod_uid("a-side");
    q.set_container_name("test");
    rp::GetTopologyAwareResourcesResponse tr;
    REQUIRE(plugin->GetTopologyAwareResources(&ctx2, q, &tr).ok());
    CHECK_FALSE(tr.has_container_topology_aware_resources());
  }
}

TEST_CASE("e2e: topology-aware resources and RemovePod (TestRemovePod, TestGetTopologyAware*)") {
  Harness h;
  h.Start();
  auto plugin = h.Plugin();
  auto req = Req::Container("pod-r", rp::MAIN, "shared_cores", 5000);
  (*req.mutable_annotations())[kClassKey] = "12345";
  Req::NamespaceType(&req, "host_ns_preferred");
  Req::Hint(&req, {0, 1}, true);
  {
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    REQUIRE(plugin->Allocate(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    rp::GetTopologyAwareResourcesRequest q;
    q.set_pod_uid("pod-r");
    q.set_container_name("test");
    rp::GetTopologyAwareResourcesResponse tr;
    REQUIRE(plugin->GetTopologyAwareResources(&ctx, q, &tr).ok());
    CHECK(tr.pod_uid() == "pod-r");
    CHECK(tr.pod_name() == "test");
    CHECK(tr.pod_namespace() == "test");
    CHECK(tr.container_topology_aware_resources().container_name() == "test");
    const auto& res = tr.container_topology_aware_resources().allocated_resources().at(kResource);
    CHECK(res.is_node_resource());
    CHECK(res.is_scalar_resource());
    CHECK(res.aggregated_quantity() == 5000);
    CHECK(res.original_aggregated_quantity() == 5000);
    REQUIRE(res.topology_aware_quantity_list_size() == 1);
    const auto& q0 = res.topology_aware_quantity_list(0);
    CHECK(q0.resource_value() == 5000);
    CHECK(q0.node() == 0);
    CHECK(q0.name() == "eth0");
    CHECK(q0.type() == "NIC");
    CHECK(q0.topology_level() == rp::SOCKET);
    CHECK(q0.annotations().at("katalyst.kubewharf.io/resource_identifier") == "eth0");
    CHECK(q0.annotations().at("katalyst.kubewharf.io/netns_name").empty());
    CHECK(res.original_topology_aware_quantity_list_size() == 1);
  }
  {
    grpc::ClientContext ctx;
    rp::GetTopologyAwareAllocatableResourcesResponse alloc;
    REQUIRE(plugin
                ->GetTopologyAwareAllocatableResources(
                    &ctx, rp::GetTopologyAwareAllocatableResourcesRequest(), &alloc)
                .ok());
    const auto& r = alloc.allocatable_resources().at(kResource);
    CHECK(r.is_node_resource());
    CHECK(r.is_scalar_resource());
    CHECK(r.aggregated_allocatable_quantity() == 38500);  // static: allocations not subtracted
    CHECK(r.aggregated_capacity_quantity() == 42500);
    REQUIRE(r.topology_aware_allocatable_quantity_list_size() == 2);
    const auto& e0 = r.topology_aware_allocatable_quantity_list(0);
    const auto& e2 = r.topology_aware_allocatable_quantity_list(1);
    CHECK(e0.resource_value() == 17250);
    CHECK(e0.node() == 0);
    CHECK(e0.name() == "eth0");
    CHECK(e0.annotations().at("katalyst.kubewharf.io/resource_identifier") == "eth0");
    CHECK(e2.resource_value() == 21250);
    CHECK(e2.node() == 1);
    CHECK(e2.name() == "eth2");
    CHECK(e2.annotations().at("katalyst.kubewharf.io/resource_identifier") == "ns2-eth2");
    CHECK(e2.annotations().at("katalyst.kubewharf.io/netns_name") == "ns2");
    REQUIRE(r.topology_aware_capacity_quantity_list_size() == 2);
    CHECK(r.topology_aware_capacity_quantity_list(0).resource_value() == 21250);
    CHECK(r.topology_aware_capacity_quantity_list(1).resource_value() == 21250);
  }
  {
    grpc::ClientContext ctx;
    rp::RemovePodRequest rm;
    rm.set_pod_uid("pod-r");
    rp::RemovePodResponse rr;
    REQUIRE(plugin->RemovePod(&ctx, rm, &rr).ok());
    grpc::ClientContext ctx2;
    rp::GetTopologyAwareResourcesRequest q;
    q.set_pod_uid("pod-r");
    q.set_container_name("test");
    rp::GetTopologyAwareResourcesResponse tr;
    REQUIRE(plugin->GetTopologyAwareResources(&ctx2, q, &tr).ok());
    CHECK(tr.ByteSizeLong() == 0);
    // Removing an unknown pod is not an error.
    grpc::ClientContext ctx3;
    rm.set_pod_uid("never-seen");
    CHECK(plugin->RemovePod(&ctx3, rm, &rr).ok());
  }
}

TEST_CASE("e2e: bad requests get clear errors and change nothing") {
  Harness h;
  h.Start();
  auto plugin = h.Plugin();
  struct Case {
    const char* what;
    std::function<void(rp::ResourceRequest*)> mutate;
    grpc::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"empty request", [](rp::ResourceRequest* r) { r->Clear(); },
       grpc::StatusCode::INVALID_ARGUMENT, "pod"},
      {"negative",
       [](rp::ResourceRequest* r) { (*r->mutable_resource_requests())[kResource] = -1; },
       grpc::StatusCode::INVALID_ARGUMENT, "-1"},
      {"NaN",
       [](rp::ResourceRequest* r) {
         (*r->mutable_resource_requests())[kResource] = std::numeric_limits<double>::quiet_NaN();
       },
       grpc::StatusCode::INVALID_ARGUMENT, ""},
      {"too big",
       [](rp::ResourceRequest* r) { (*r->mutable_resource_requests())[kResource] = 5e9; },
       grpc::StatusCode::INVALID_ARGUMENT, ""},
      {"unknown resource", [](rp::ResourceRequest* r) { r->set_resource_name("cpu"); },
       grpc::StatusCode::INVALID_ARGUMENT, "cpu"},
      {"bad class id",
       [](rp::ResourceRequest* r) { (*r->mutable_annotations())[kClassKey] = "x1"; },
       grpc::StatusCode::INVALID_ARGUMENT, "x1"},
      {"bad enhancement",
       [](rp::ResourceRequest* r) { (*r->mutable_annotations())[kEnhancementKey] = "{oops"; },
       grpc::StatusCode::INVALID_ARGUMENT, "network_enhancement"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto req = Req::Container("bad-pod", rp::MAIN, "shared_cores", 100);
    c.mutate(&req);
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    auto st = plugin->Allocate(&ctx, req, &resp);
    INFO(st.error_message());
    CHECK(st.error_code() == c.code);
    CHECK_THAT(st.error_message(), Catch::Contains(c.message));
  }
  auto ctl = h.Ctl({"allocations", "--json"});
  INFO(ctl.output);
  REQUIRE(ctl.exit_code == 0);
  CHECK(ctl.output.find("bad-pod") == std::string::npos);
}
