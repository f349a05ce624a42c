// Field-by-field translation between the kubelet protos and the core types.
#include "grpc/translate.h"

#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>

#include "core/constants.h"

namespace netqos::grpcadapter {
namespace {

pb::ResourceRequest FullRequest() {
  pb::ResourceRequest req;
  req.set_pod_uid("uid-1");
  req.set_pod_namespace("ns");
  req.set_pod_name("pod");
  req.set_container_name("main");
  req.set_container_type(pb::EPHEMERAL);
  req.set_container_index(3);
  req.set_pod_role("role");
  req.set_pod_type("type");
  req.set_resource_name(core::kResourceName);
  req.mutable_hint()->add_nodes(2);
  req.mutable_hint()->add_nodes(3);
  req.mutable_hint()->set_preferred(true);
  (*req.mutable_resource_requests())[core::kResourceName] = 1500;
  (*req.mutable_labels())["l"] = "lv";
  (*req.mutable_annotations())["a"] = "av";
  req.set_native_qos_class("Guaranteed");
  return req;
}

pb::PodResourceRequest FullPodRequest() {
  pb::PodResourceRequest req;
  req.set_pod_uid("uid-2");
  req.set_pod_namespace("ns");
  req.set_pod_name("pod");
  req.set_pod_role("role");
  req.set_pod_type("type");
  req.set_resource_name(core::kResourceName);
  req.mutable_hint()->add_nodes(0);
  (*req.mutable_resource_requests())[core::kResourceName] = 200;
  (*req.mutable_labels())["l"] = "lv";
  (*req.mutable_annotations())["a"] = "av";
  return req;
}

bool Same(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

core::StringMap Map(const google::protobuf::Map<std::string, std::string>& m) {
  return core::StringMap(m.begin(), m.end());
}

}  // namespace

TEST_CASE("ResourceRequest to core copies every field", "[grpc][translate]") {
  const auto req = ToCore(FullRequest());
  CHECK(req.pod_uid == "uid-1");
  CHECK(req.pod_namespace == "ns");
  CHECK(req.pod_name == "pod");
  CHECK(req.container_name == "main");
  CHECK(req.container_type == core::ContainerType::kEphemeral);
  CHECK(req.container_index == 3);
  CHECK(req.pod_role == "role");
  CHECK(req.pod_type == "type");
  CHECK(req.resource_name == core::kResourceName);
  REQUIRE(req.hint.has_value());
  CHECK(req.hint->nodes == std::vector<uint64_t>{2, 3});
  CHECK(req.hint->preferred);
  CHECK(req.resource_requests == std::map<std::string, double>{{core::kResourceName, 1500}});
  CHECK(req.labels == core::StringMap{{"l", "lv"}});
  CHECK(req.annotations == core::StringMap{{"a", "av"}});
  CHECK(req.native_qos_class == "Guaranteed");

  // And back: core -> proto reproduces the request exactly.
  CHECK(Same(ToProto(req), FullRequest()));
}

TEST_CASE("an unset hint is nullopt, an empty one is not", "[grpc][translate]") {
  pb::ResourceRequest req;
  CHECK_FALSE(ToCore(req).hint.has_value());
  req.mutable_hint();
  REQUIRE(ToCore(req).hint.has_value());
  CHECK(ToCore(req).hint->nodes.empty());
}

TEST_CASE("container types map one to one, unknown values act as MAIN", "[grpc][translate]") {
  pb::ResourceRequest req;
  req.set_container_type(pb::INIT);
  CHECK(ToCore(req).container_type == core::ContainerType::kInit);
  req.set_container_type(pb::MAIN);
  CHECK(ToCore(req).container_type == core::ContainerType::kMain);
  req.set_container_type(pb::SIDECAR);
  CHECK(ToCore(req).container_type == core::ContainerType::kSidecar);
  req.set_container_type(static_cast<pb::ContainerType>(7));
  CHECK(ToCore(req).container_type == core::ContainerType::kMain);
}

TEST_CASE("PodResourceRequest to core copies every field", "[grpc][translate]") {
  const auto req = ToCore(FullPodRequest());
  CHECK(req.pod_uid == "uid-2");
  CHECK(req.pod_namespace == "ns");
  CHECK(req.pod_name == "pod");
  CHECK(req.pod_role == "role");
  CHECK(req.pod_type == "type");
  CHECK(req.resource_name == core::kResourceName);
  REQUIRE(req.hint.has_value());
  CHECK(req.hint->nodes == std::vector<uint64_t>{0});
  CHECK_FALSE(req.hint->preferred);
  CHECK(req.resource_requests == std::map<std::string, double>{{core::kResourceName, 200}});
  CHECK(req.labels == core::StringMap{{"l", "lv"}});
  CHECK(req.annotations == core::StringMap{{"a", "av"}});
  CHECK(Same(ToProto(req), FullPodRequest()));
}

TEST_CASE("hints response echoes the request and carries the filtered maps", "[grpc][translate]") {
  core::HintsResponse hints;
  hints.resource_name = core::kResourceName;
  hints.hints = std::vector<core::TopologyHint>{{{0, 1}, true}};
  hints.labels = {{"fl", "1"}};
  hints.annotations = {{"fa", "2"}};
  pb::ResourceHintsResponse out;
  ToProto(FullRequest(), hints, &out);
  CHECK(out.pod_uid() == "uid-1");
  CHECK(out.pod_namespace() == "ns");
  CHECK(out.pod_name() == "pod");
  CHECK(out.container_name() == "main");
  CHECK(out.container_type() == pb::EPHEMERAL);
  CHECK(out.container_index() == 3);
  CHECK(out.pod_role() == "role");
  CHECK(out.pod_type() == "type");
  CHECK(out.resource_name() == core::kResourceName);
  CHECK(out.native_qos_class() == "Guaranteed");
  CHECK(Map(out.labels()) == hints.labels);
  CHECK(Map(out.annotations()) == hints.annotations);
  REQUIRE(out.resource_hints_size() == 1);
  CHECK(out.resource_hints(0).key() == core::kResourceName);
  REQUIRE(out.resource_hints(0).value().hints_size() == 1);
  CHECK(ToCore(out.resource_hints(0).value().hints(0)) == core::TopologyHint{{0, 1}, true});

  pb::PodResourceHintsResponse pod_out;
  ToProto(FullPodRequest(), hints, &pod_out);
  CHECK(pod_out.pod_uid() == "uid-2");
  CHECK(pod_out.pod_namespace() == "ns");
  CHECK(pod_out.pod_name() == "pod");
  CHECK(pod_out.pod_role() == "role");
  CHECK(pod_out.pod_type() == "type");
  CHECK(pod_out.resource_name() == core::kResourceName);
  CHECK(Map(pod_out.labels()) == hints.labels);
  CHECK(Map(pod_out.annotations()) == hints.annotations);
  REQUIRE(pod_out.resource_hints_size() == 1);
  CHECK(pod_out.resource_hints(0).value().hints_size() == 1);
}

TEST_CASE("allocation response follows packAllocationResponse", "[grpc][translate]") {
  core::AllocationResponse alloc;
  alloc.resource_name = "as-requested";
  alloc.has_allocation = true;
  alloc.allocated_quantity = 1500;
  alloc.allocation_result = "0-1";
  alloc.allocation_annotations = core::StringMap{{core::kDefaultNicNameAnnotationKey, "eth0"}};
  alloc.hint = core::TopologyHint{{0, 1}, true};
  alloc.labels = {{"fl", "1"}};
  alloc.annotations = {{"fa", "2"}};

  pb::ResourceAllocationResponse out;
  ToProto(FullRequest(), alloc, &out);
  CHECK(out.pod_uid() == "uid-1");
  CHECK(out.pod_namespace() == "ns");
  CHECK(out.pod_name() == "pod");
  CHECK(out.container_name() == "main");
  CHECK(out.container_type() == pb::EPHEMERAL);
  CHECK(out.container_index() == 3);
  CHECK(out.pod_role() == "role");
  CHECK(out.pod_type() == "type");
  CHECK(out.resource_name() == "as-requested");
  CHECK(out.native_qos_class().empty());
  CHECK(Map(out.labels()) == alloc.labels);
  CHECK(Map(out.annotations()) == alloc.annotations);
  REQUIRE(out.has_allocation_result());
  const auto& ra = out.allocation_result().resource_allocation();
  REQUIRE(ra.size() == 1);
  const auto& info = ra.at(core::kResourceName);
  CHECK(info.oci_property_name().empty());
  CHECK(info.is_node_resource());
  CHECK(info.is_scalar_resource());
  CHECK(info.allocated_quantity() == 1500);
  CHECK(info.allocation_result() == "0-1");
  CHECK(info.envs().empty());
  CHECK(Map(info.annotations()) == *alloc.allocation_annotations);
  REQUIRE(info.resource_hints().hints_size() == 1);
  CHECK(ToCore(info.resource_hints().hints(0)) == core::TopologyHint{{0, 1}, true});
  CHECK(info.topology_assignments().empty());

  pb::PodResourceAllocationResponse pod_out;
  ToProto(FullPodRequest(), alloc, &pod_out);
  CHECK(pod_out.pod_uid() == "uid-2");
  CHECK(pod_out.pod_namespace() == "ns");
  CHECK(pod_out.pod_name() == "pod");
  CHECK(pod_out.pod_role() == "role");
  CHECK(pod_out.pod_type() == "type");
  CHECK(pod_out.resource_name() == "as-requested");
  CHECK(Map(pod_out.labels()) == alloc.labels);
  REQUIRE(pod_out.allocation_result().resource_allocation().count(core::kResourceName) == 1);
}

TEST_CASE("INIT allocation leaves allocation_result unset, sidecar has no annotations",
          "[grpc][translate]") {
  core::AllocationResponse init;
  init.resource_name = core::kResourceName;
  pb::ResourceAllocationResponse out;
  ToProto(FullRequest(), init, &out);
  CHECK_FALSE(out.has_allocation_result());

  core::AllocationResponse sidecar;
  sidecar.resource_name = core::kResourceName;
  sidecar.has_allocation = true;
  pb::ResourceAllocationResponse side_out;
  ToProto(FullRequest(), sidecar, &side_out);
  const auto& info = side_out.allocation_result().resource_allocation().at(core::kResourceName);
  CHECK(info.allocated_quantity() == 0);
  CHECK(info.allocation_result().empty());
  CHECK(info.annotations().empty());
  REQUIRE(info.resource_hints().hints_size() == 1);
  CHECK(info.resource_hints().hints(0).nodes_size() == 0);
  CHECK_FALSE(info.resource_hints().hints(0).preferred());
}

TEST_CASE("topology-aware resources", "[grpc][translate]") {
  pb::GetTopologyAwareResourcesResponse empty;
  ToProto(core::TopologyAwareResources{}, &empty);
  CHECK(empty.ByteSizeLong() == 0);

  core::TopologyAwareQuantity q;
  q.resource_value = 1000;
  q.node = 1;
  q.name = "eth0";
  q.type = core::kNicTopologyType;
  q.topology_level = core::kTopologyLevelSocket;
  q.annotations = {{core::kResourceIdentifierKey, "eth0"}, {core::kNetnsNameKey, ""}};
  core::TopologyAwareResources res;
  res.found = true;
  res.pod_uid = "uid";
  res.pod_name = "pod";
  res.pod_namespace = "ns";
  res.container_name = "main";
  res.aggregated_quantity = 1000;
  res.quantities = {q};

  pb::GetTopologyAwareResourcesResponse out;
  ToProto(res, &out);
  CHECK(out.pod_uid() == "uid");
  CHECK(out.pod_name() == "pod");
  CHECK(out.pod_namespace() == "ns");
  CHECK(out.container_topology_aware_resources().container_name() == "main");
  const auto& resources = out.container_topology_aware_resources().allocated_resources();
  REQUIRE(resources.size() == 1);
  const auto& r = resources.at(core::kResourceName);
  CHECK(r.is_node_resource());
  CHECK(r.is_scalar_resource());
  CHECK(r.aggregated_quantity() == 1000);
  CHECK(r.original_aggregated_quantity() == 1000);
  REQUIRE(r.topology_aware_quantity_list_size() == 1);
  REQUIRE(r.original_topology_aware_quantity_list_size() == 1);
  const auto& pq = r.topology_aware_quantity_list(0);
  CHECK(pq.resource_value() == 1000);
  CHECK(pq.node() == 1);
  CHECK(pq.name() == "eth0");
  CHECK(pq.type() == "NIC");
  CHECK(pq.topology_level() == pb::SOCKET);
  CHECK(Map(pq.annotations()) == q.annotations);
  CHECK(Same(r.original_topology_aware_quantity_list(0), pq));
}

TEST_CASE("allocatable resources", "[grpc][translate]") {
  core::TopologyAwareQuantity a{900, 0, "eth0", "NIC", 1, {{core::kResourceIdentifierKey, "eth0"}}};
  core::TopologyAwareQuantity c{940, 0, "eth0", "NIC", 1, {{core::kResourceIdentifierKey, "eth0"}}};
  core::AllocatableResources res{900, 940, {a}, {c}};
  pb::GetTopologyAwareAllocatableResourcesResponse out;
  ToProto(res, &out);
  REQUIRE(out.allocatable_resources().size() == 1);
  const auto& r = out.allocatable_resources().at(core::kResourceName);
  CHECK(r.is_node_resource());
  CHECK(r.is_scalar_resource());
  CHECK(r.aggregated_allocatable_quantity() == 900);
  CHECK(r.aggregated_capacity_quantity() == 940);
  REQUIRE(r.topology_aware_allocatable_quantity_list_size() == 1);
  REQUIRE(r.topology_aware_capacity_quantity_list_size() == 1);
  CHECK(r.topology_aware_allocatable_quantity_list(0).resource_value() == 900);
  CHECK(r.topology_aware_capacity_quantity_list(0).resource_value() == 940);

  pb::GetTopologyAwareAllocatableResourcesResponse none;
  ToProto(core::AllocatableResources{}, &none);
  const auto& z = none.allocatable_resources().at(core::kResourceName);
  CHECK(z.topology_aware_allocatable_quantity_list_size() == 0);
  CHECK(z.aggregated_capacity_quantity() == 0);
}

TEST_CASE("plugin options", "[grpc][translate]") {
  pb::ResourcePluginOptions out;
  ToProto(core::PluginOptions{}, &out);
  CHECK_FALSE(out.pre_start_required());
  CHECK(out.with_topology_alignment());
  CHECK_FALSE(out.need_reconcile());
}

}  // namespace netqos::grpcadapter
