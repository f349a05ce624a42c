// ResourcePluginService and AdminService end to end: a kubelet-style client over a real unix
// socket, a real AllocationService and core policy behind them.
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "grpc/translate.h"
#include "netqos/admin/v1/admin.grpc.pb.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"
#include "unit/grpc/grpc_test_util.h"
#include "unit/grpc/service_fixture.h"

namespace netqos::grpcadapter {
namespace {

namespace admin = ::netqos::admin::v1;

class Client {
 public:
  explicit Client(const std::string& socket)
      : channel_(netqos::testing::FreshChannel(socket)),
        rp_(pb::ResourcePlugin::NewStub(channel_)),
        admin_(admin::Admin::NewStub(channel_)) {}

  template <typename Req, typename Resp, typename Method>
  grpc::Status Call(Method method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ((*rp_).*method)(&ctx, req, resp);
  }
  template <typename Req, typename Resp, typename Method>
  grpc::Status Admin(Method method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ((*admin_).*method)(&ctx, req, resp);
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::ResourcePlugin::Stub> rp_;
  std::unique_ptr<admin::Admin::Stub> admin_;
};

using Stub = pb::ResourcePlugin::Stub;

pb::ResourceRequest Request(const std::string& uid, pb::ContainerType type, double mbps) {
  pb::ResourceRequest r;
  r.set_pod_uid(uid);
  r.set_pod_namespace("ns");
  r.set_pod_name("pod-" + uid);
  r.set_container_name(type == pb::INIT ? "init" : "main");
  r.set_container_type(type);
  r.set_resource_name(core::kResourceName);
  (*r.mutable_resource_requests())[core::kResourceName] = mbps;
  (*r.mutable_annotations())[core::kQosLevelKey] = core::kSharedCores;
  (*r.mutable_annotations())["dropped"] = "by the QoS filter";
  r.set_native_qos_class("Burstable");
  return r;
}

}  // namespace

TEST_CASE("served ResourcePlugin: options, hints, allocate, views, remove", "[grpc][service]") {
  netqos::testing::ServedStack stack;
  Client c(stack.socket());

  pb::ResourcePluginOptions options;
  REQUIRE(c.Call(&Stub::GetResourcePluginOptions, pb::Empty{}, &options).ok());
  CHECK(options.with_topology_alignment());
  CHECK_FALSE(options.pre_start_required());
  CHECK_FALSE(options.need_reconcile());

  SECTION("INIT hints are nil, impossible hints are empty") {
    pb::ResourceHintsResponse init;
    REQUIRE(c.Call(&Stub::GetTopologyHints, Request("u1", pb::INIT, 100), &init).ok());
    REQUIRE(init.resource_hints_size() == 1);
    CHECK(init.resource_hints(0).key() == core::kResourceName);
    CHECK_FALSE(init.resource_hints(0).has_value());
    CHECK(init.native_qos_class() == "Burstable");
    CHECK(init.container_type() == pb::INIT);

    auto restricted = Request("u1", pb::MAIN, 1e6);
    (*restricted.mutable_annotations())[core::kNetworkEnhancementKey] =
        R"({"topology_affinity_restricted": "true"})";
    pb::ResourceHintsResponse none;
    REQUIRE(c.Call(&Stub::GetTopologyHints, restricted, &none).ok());
    REQUIRE(none.resource_hints_size() == 1);
    CHECK(none.resource_hints(0).has_value());
    CHECK(none.resource_hints(0).value().hints_size() == 0);

    pb::ResourceHintsResponse main;
    REQUIRE(c.Call(&Stub::GetTopologyHints, Request("u1", pb::MAIN, 1000), &main).ok());
    REQUIRE(main.resource_hints(0).has_value());
    CHECK(main.resource_hints(0).value().hints_size() >= 1);
    // Echoed maps are the filtered ones.
    CHECK(main.annotations().count("dropped") == 0);
    CHECK(main.annotations().at(core::kQosLevelKey) == core::kSharedCores);
  }

  SECTION("allocate, list, topology-aware, remove") {
    pb::ResourceAllocationResponse alloc;
    REQUIRE(c.Call(&Stub::Allocate, Request("u2", pb::MAIN, 1000), &alloc).ok());
    CHECK(alloc.pod_uid() == "u2");
    CHECK(alloc.container_name() == "main");
    CHECK(alloc.native_qos_class().empty());
    const auto& info = alloc.allocation_result().resource_allocation().at(core::kResourceName);
    CHECK(info.is_node_resource());
    CHECK(info.is_scalar_resource());
    CHECK(info.allocated_quantity() == 1000);
    CHECK(info.allocation_result() == "0-1");  // FirstNicChooser: eth0 on socket 0
    CHECK(info.annotations().at(core::kDefaultNicNameAnnotationKey) == "eth0");
    CHECK(info.resource_hints().hints_size() == 1);

    admin::ListAllocationsResponse list;
    REQUIRE(
        c.Admin(&admin::Admin::Stub::ListAllocations, admin::ListAllocationsRequest{}, &list).ok());
    REQUIRE(list.allocations_size() == 1);
    CHECK(list.allocations(0).pod_uid() == "u2");
    CHECK(list.allocations(0).pod_namespace() == "ns");
    CHECK(list.allocations(0).nic() == "eth0");
    CHECK(list.allocations(0).egress_mbps() == 1000);
    CHECK(list.allocations(0).numa_nodes() == "0-1");
    CHECK(list.allocations(0).qos_level() == core::kSharedCores);

    admin::GetCapacityResponse cap;
    REQUIRE(c.Admin(&admin::Admin::Stub::GetCapacity, admin::GetCapacityRequest{}, &cap).ok());
    REQUIRE(cap.nics_size() == 2);
    CHECK(cap.nics(0).nic() == "eth0");
    CHECK(cap.nics(0).socket() == 0);
    CHECK(cap.nics(0).containers() == 1);
    CHECK(cap.nics(0).egress().allocated() == 1000);
    CHECK(cap.nics(1).nic() == "ns2-eth2");
    CHECK(cap.nics(1).socket() == 1);
    CHECK(cap.nics(1).containers() == 0);

    pb::GetTopologyAwareResourcesRequest tar;
    tar.set_pod_uid("u2");
    tar.set_container_name("main");
    pb::GetTopologyAwareResourcesResponse ta;
    REQUIRE(c.Call(&Stub::GetTopologyAwareResources, tar, &ta).ok());
    CHECK(ta.pod_uid() == "u2");
    const auto& res =
        ta.container_topology_aware_resources().allocated_resources().at(core::kResourceName);
    CHECK(res.aggregated_quantity() == 1000);
    REQUIRE(res.topology_aware_quantity_list_size() == 1);
    CHECK(res.topology_aware_quantity_list(0).name() == "eth0");
    CHECK(res.topology_aware_quantity_list(0).type() == "NIC");
    CHECK(res.topology_aware_quantity_list(0).topology_level() == pb::SOCKET);

    pb::RemovePodRequest rm;
    rm.set_pod_uid("u2");
    pb::RemovePodResponse rm_resp;
    REQUIRE(c.Call(&Stub::RemovePod, rm, &rm_resp).ok());
    pb::GetTopologyAwareResourcesResponse gone;
    REQUIRE(c.Call(&Stub::GetTopologyAwareResources, tar, &gone).ok());
    CHECK(gone.ByteSizeLong() == 0);
  }

  SECTION("INIT and SIDECAR allocations") {
    pb::ResourceAllocationResponse init;
    REQUIRE(c.Call(&Stub::Allocate, Request("u3", pb::INIT, 100), &init).ok());
    CHECK_FALSE(init.has_allocation_result());
    CHECK(init.resource_name() == core::kResourceName);

    pb::ResourceAllocationResponse side;
    auto req = Request("u3", pb::SIDECAR, 100);
    req.set_container_name("side");
    REQUIRE(c.Call(&Stub::Allocate, req, &side).ok());
    const auto& info = side.allocation_result().resource_allocation().at(core::kResourceName);
    CHECK(info.allocated_quantity() == 0);
    CHECK(info.allocation_result().empty());
    REQUIRE(info.resource_hints().hints_size() == 1);
    CHECK(info.resource_hints().hints(0).ByteSizeLong() == 0);  // nil hint -> empty message
  }

  SECTION("pod-level RPCs") {
    pb::PodResourceRequest req;
    req.set_pod_uid("u4");
    req.set_pod_namespace("ns");
    req.set_pod_name("p4");
    req.set_resource_name(core::kResourceName);
    (*req.mutable_resource_requests())[core::kResourceName] = 500;
    pb::PodResourceHintsResponse hints;
    REQUIRE(c.Call(&Stub::GetPodTopologyHints, req, &hints).ok());
    CHECK(hints.pod_uid() == "u4");
    REQUIRE(hints.resource_hints_size() == 1);
    pb::PodResourceAllocationResponse alloc;
    REQUIRE(c.Call(&Stub::AllocateForPod, req, &alloc).ok());
    CHECK(alloc.pod_uid() == "u4");
    CHECK(alloc.allocation_result()
              .resource_allocation()
              .at(core::kResourceName)
              .allocated_quantity() == 500);
  }

  SECTION("trivial RPCs return empty responses") {
    pb::GetResourcesAllocationResponse all;
    REQUIRE(c.Call(&Stub::GetResourcesAllocation, pb::GetResourcesAllocationRequest{}, &all).ok());
    CHECK(all.ByteSizeLong() == 0);
    pb::PreStartContainerRequest pre;
    pre.set_pod_uid("u1");
    pb::PreStartContainerResponse pre_resp;
    REQUIRE(c.Call(&Stub::PreStartContainer, pre, &pre_resp).ok());
    pb::GetTopologyAwareAllocatableResourcesResponse alloc;
    REQUIRE(c.Call(&Stub::GetTopologyAwareAllocatableResources,
                   pb::GetTopologyAwareAllocatableResourcesRequest{}, &alloc)
                .ok());
    const auto& r = alloc.allocatable_resources().at(core::kResourceName);
    CHECK(r.topology_aware_capacity_quantity_list_size() == 2);
    CHECK(r.aggregated_capacity_quantity() > 0);
  }
}

TEST_CASE("served ResourcePlugin: errors keep the service's code and message", "[grpc][service]") {
  netqos::testing::ServedStack stack;
  Client c(stack.socket());

  for (const auto& req : {Request("big", pb::MAIN, 1e6), [] {
                            auto r = Request("badqos", pb::MAIN, 10);
                            (*r.mutable_annotations())[core::kQosLevelKey] = "no_such_level";
                            return r;
                          }()}) {
    auto direct = stack.service().Allocate(ToCore(req));
    REQUIRE_FALSE(direct.ok());
    pb::ResourceAllocationResponse resp;
    auto s = c.Call(&Stub::Allocate, req, &resp);
    CHECK(static_cast<int>(s.error_code()) == static_cast<int>(direct.status().code()));
    CHECK(s.error_message() == direct.status().message());
  }
}

}  // namespace netqos::grpcadapter
