#include "grpc/admin_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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

void FillTopology(const service::AllocationService::View& view, admin::GetTopologyResponse* out) {
  for (const auto& node : view.numa_nodes) {
    auto* n = out->add_numa_nodes();
    n->set_id(node.id);
    n->set_socket(node.socket);
  }
  for (const auto& nic : view.topology_nics) {
    auto* t = out->add_nics();
    t->set_nic(nic.id.Identifier());
    t->set_netns(nic.id.netns);
    t->set_name(nic.id.name);
    t->set_ifindex(nic.ifindex);
    t->set_speed_mbps(nic.speed_mbps);
    t->set_numa_node(nic.numa_node);
    t->set_socket(SocketOf(nic, view.numa_nodes));
    for (const auto& ip : nic.ipv4) t->add_ipv4(ip);
    for (const auto& ip : nic.ipv6) t->add_ipv6(ip);
    t->set_netns_path(nic.netns_path);
    t->set_pci_address(nic.pci_address);
    // Health is the policy's verdict for managed NICs; a NIC it never managed was never usable.
    auto managed = std::find_if(view.nics.begin(), view.nics.end(),
                                [&](const core::Nic& m) { return m.id == nic.id; });
    t->set_managed(managed != view.nics.end());
    if (managed != view.nics.end()) {
      t->set_healthy(managed->healthy);
      t->set_unhealthy_reason(managed->unhealthy_reason);
    } else {
      t->set_healthy(false);
      t->set_unhealthy_reason(!nic.enabled ? "link disabled since start"
                              : (nic.ipv4.empty() && nic.ipv6.empty()) ? "no IP address since start"
                                                                       : nic.unhealthy_reason);
    }
  }
}

grpc::Status AdminService::GetTopology(grpc::ServerContext*, const admin::GetTopologyRequest*,
                                       admin::GetTopologyResponse* resp) {
  return RunGuarded("GetTopology", [&] {
    spdlog::debug("rpc called rpc=GetTopology");
    resp->set_source(topology_source_);
    FillTopology(service_.Snapshot(), resp);
    return grpc::Status::OK;
  });
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
