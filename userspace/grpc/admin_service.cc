#include "grpc/admin_service.h"

#include <spdlog/spdlog.h>

#include "core/numa_set.h"
#include "grpc/rpc_guard.h"

namespace netqos::grpcadapter {
namespace admin = ::netqos::admin::v1;
namespace {

// A NIC's socket is its NUMA node's socket; an unknown NUMA (-1) counts as NUMA 0, as the
// policy treats it.
int SocketOf(const core::Nic& nic, const std::vector<core::NumaNode>& numa_nodes) {
  const int numa = nic.numa_node < 0 ? 0 : nic.numa_node;
  for (const auto& node : numa_nodes) {
    if (node.id == numa) return node.socket;
  }
  return 0;
}

void FillBandwidth(const core::BandwidthInfo& bw, admin::Bandwidth* out) {
  out->set_capacity(bw.capacity);
  // Everything withheld from allocation: the system reservation plus the configured one.
  out->set_reservation(bw.sys_reservation + bw.reservation);
  out->set_allocatable(bw.allocatable);
  out->set_allocated(bw.allocated);
  out->set_free(bw.free);
}

}  // namespace

void FillAllocations(const service::AllocationService::View& view,
                     admin::ListAllocationsResponse* out) {
  for (const auto& [uid, containers] : view.pod_entries) {
    for (const auto& [name, info] : containers) {
      auto* a = out->add_allocations();
      a->set_pod_uid(info.pod_uid.empty() ? uid : info.pod_uid);
      a->set_pod_namespace(info.pod_namespace);
      a->set_pod_name(info.pod_name);
      a->set_container_name(info.container_name);
      a->set_container_type(info.container_type);
      a->set_qos_level(info.qos_level);
      a->set_nic(info.nic().Identifier());
      a->set_netns(info.ns_name);
      a->set_if_name(info.if_name);
      a->set_egress_mbps(info.egress);
      a->set_ingress_mbps(info.ingress);
      a->set_numa_nodes(core::FormatNumaList(info.numa_nodes));
      a->set_net_class_id(info.net_class_id);
    }
  }
}

void FillCapacity(const service::AllocationService::View& view, admin::GetCapacityResponse* out) {
  for (const auto& nic : view.nics) {
    auto* c = out->add_nics();
    c->set_nic(nic.id.Identifier());
    c->set_netns(nic.id.netns);
    c->set_name(nic.id.name);
    c->set_speed_mbps(nic.speed_mbps);
    c->set_numa_node(nic.numa_node);
    c->set_socket(SocketOf(nic, view.numa_nodes));
    c->set_healthy(nic.healthy);
    c->set_unhealthy_reason(nic.unhealthy_reason);
    if (auto it = view.machine_state.find(nic.id); it != view.machine_state.end()) {
      FillBandwidth(it->second.egress, c->mutable_egress());
      FillBandwidth(it->second.ingress, c->mutable_ingress());
    }
    uint32_t containers = 0;
    for (const auto& [uid, entries] : view.pod_entries) {
      for (const auto& [name, info] : entries) {
        if (info.nic() == nic.id) ++containers;
      }
    }
    c->set_containers(containers);
  }
}

grpc::Status AdminService::ListAllocations(grpc::ServerContext*,
                                           const admin::ListAllocationsRequest*,
                                           admin::ListAllocationsResponse* resp) {
  return RunGuarded("ListAllocations", [&] {
    spdlog::debug("rpc called rpc=ListAllocations");
    FillAllocations(service_.Snapshot(), resp);
    return grpc::Status::OK;
  });
}

grpc::Status AdminService::GetCapacity(grpc::ServerContext*, const admin::GetCapacityRequest*,
                                       admin::GetCapacityResponse* resp) {
  return RunGuarded("GetCapacity", [&] {
    spdlog::debug("rpc called rpc=GetCapacity");
    FillCapacity(service_.Snapshot(), resp);
    return grpc::Status::OK;
  });
}

}  // namespace netqos::grpcadapter
