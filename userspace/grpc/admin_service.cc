#include "grpc/admin_service.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "common/format_stamp.h"
#include "common/version.h"
#include "core/constants.h"
#include "core/numa_set.h"
#include "grpc/rpc_guard.h"
#include "render/counters_proto.h"

namespace netqos::grpcadapter {
namespace admin = ::netqos::admin::v1;
namespace {

void FillFormatStamp(const FormatStamp& stamp, admin::FormatStampStatus* out) {
  out->set_generation(stamp.generation);
  out->set_min_reader(stamp.min_reader);
  out->set_release(stamp.release);
}

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

void FillLeaf(const service::LeafQueue& leaf, admin::LeafQueue* out) {
  out->set_device(leaf.device);
  out->set_htb_class(leaf.htb_class);
  render::CountersToProto(leaf.counters, out->mutable_counters());
  out->set_error(leaf.error);
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
      t->set_unhealthy_reason(!nic.enabled                             ? "link disabled since start"
                              : (nic.ipv4.empty() && nic.ipv6.empty()) ? "no IP address since start"
                                                                       : nic.unhealthy_reason);
    }
  }
}

void FillStatus(const service::AllocationService::View& view,
                const service::EnforcementReport* enforcement, admin::GetStatusResponse* out) {
  uint32_t containers = 0;
  uint64_t egress = 0, ingress = 0;
  for (const auto& [uid, entries] : view.pod_entries) {
    for (const auto& [name, info] : entries) {
      ++containers;
      egress += info.egress;
      ingress += info.ingress;
    }
  }
  out->set_pods(static_cast<uint32_t>(view.pod_entries.size()));
  out->set_containers(containers);
  out->set_allocated_egress_mbps(egress);
  out->set_allocated_ingress_mbps(ingress);

  const std::set<std::string> shaped =
      enforcement
          ? std::set<std::string>(enforcement->shaped_nics.begin(), enforcement->shaped_nics.end())
          : std::set<std::string>();
  uint32_t healthy = 0;
  for (const auto& nic : view.nics) {
    auto* h = out->add_nics();
    h->set_nic(nic.id.Identifier());
    h->set_speed_mbps(nic.speed_mbps);
    h->set_healthy(nic.healthy);
    h->set_unhealthy_reason(nic.unhealthy_reason);
    h->set_shaped(shaped.count(nic.id.Identifier()) != 0);
    if (enforcement) {
      if (auto m = enforcement->shaping_modes.find(nic.id.Identifier());
          m != enforcement->shaping_modes.end()) {
        h->set_shaping_mode(m->second.mode);
        h->set_shaping_reason(m->second.reason);
        for (const auto& f : m->second.inactive) h->add_inactive_features(f);
      }
    }
    if (nic.healthy) ++healthy;
  }
  out->set_nics_total(static_cast<uint32_t>(view.nics.size()));
  out->set_nics_healthy(healthy);

  auto* e = out->mutable_enforcement();
  if (enforcement == nullptr) {
    e->set_mode("none");
    return;
  }
  e->set_mode(enforcement->mode);
  e->set_error(enforcement->error);
  e->set_starting(enforcement->starting);
  e->set_pin_dir(enforcement->pin_dir);
  e->set_cgroup_root(enforcement->cgroup_root);
  e->set_pods_known(enforcement->pods_known);
  e->set_passes(enforcement->passes);
  e->set_pod_list_failures(enforcement->pod_list_failures);
  e->set_problem_reports_total(enforcement->problem_reports_total);
  for (const auto& nic : enforcement->shaped_nics) e->add_shaped_nics(nic);
  for (const auto& p : enforcement->problems) {
    auto* ep = e->add_problems();
    ep->set_object(p.object);
    ep->set_message(p.message);
    ep->set_times_seen(p.times_seen);
  }
  e->set_classified_containers(static_cast<uint32_t>(enforcement->containers.size()));
}

void FillClasses(const service::EnforcementReport& report, admin::ListClassesResponse* out) {
  out->set_mode(report.mode);
  out->set_pin_dir(report.pin_dir);
  out->set_queue_counters(report.queue_counters);
  for (const auto& c : report.containers) {
    auto* cc = out->add_containers();
    cc->set_cgroup_id(c.cgroup_id);
    cc->set_pod_uid(c.pod_uid);
    cc->set_pod_namespace(c.pod_namespace);
    cc->set_pod_name(c.pod_name);
    cc->set_container(c.container);
    cc->set_qos_level(c.qos_level);
    cc->set_net_class_id(c.net_class_id);
    cc->set_priority(c.priority);
    cc->set_htb_class(c.htb_class);
    cc->set_capped(c.capped);
    cc->set_nic(c.nic);
    cc->set_allocated_mbps(c.allocated_mbps);
    const auto put_cap = [](const service::LeafCap& from, admin::LeafCap* to) {
      to->set_rate_bps(from.rate_bps);
      to->set_ceil_bps(from.ceil_bps);
      to->set_borrows(from.borrows);
      to->set_source(from.source);
      to->set_burst_bytes(from.burst_bytes);
    };
    if (c.egress_cap) put_cap(*c.egress_cap, cc->mutable_egress_cap());
    if (c.ingress_cap) put_cap(*c.ingress_cap, cc->mutable_ingress_cap());
    if (c.dscp) cc->set_dscp(*c.dscp);
    cc->set_tenant_policy(c.tenant_policy);
    cc->set_aggregate_class(c.aggregate_class);
    for (const auto& t : c.tenant_decisions) {
      auto* td = cc->add_tenant_decisions();
      td->set_annotation(t.annotation);
      td->set_value(t.value);
      td->set_verdict(t.verdict);
      td->set_reason(t.reason);
    }
    render::CountersToProto(c.counters, cc->mutable_counters());
    if (c.egress_queue) FillLeaf(*c.egress_queue, cc->mutable_egress_queue());
    if (c.ingress_queue) FillLeaf(*c.ingress_queue, cc->mutable_ingress_queue());
  }
  for (const auto& cls : report.classes) {
    auto* cc = out->add_classes();
    cc->set_net_class_id(cls.net_class_id);
    render::CountersToProto(cls.counters, cc->mutable_counters());
    if (report.queue_counters) {
      render::CountersToProto(cls.egress_queue, cc->mutable_egress_queue());
      render::CountersToProto(cls.ingress_queue, cc->mutable_ingress_queue());
    }
  }
}

grpc::Status AdminService::GetTopology(grpc::ServerContext*, const admin::GetTopologyRequest*,
                                       admin::GetTopologyResponse* resp) {
  return RunGuarded("GetTopology", [&] {
    spdlog::debug("rpc called rpc=GetTopology");
    resp->set_source(options_.topology_source);
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

grpc::Status AdminService::GetStatus(grpc::ServerContext*, const admin::GetStatusRequest*,
                                     admin::GetStatusResponse* resp) {
  return RunGuarded("GetStatus", [&] {
    spdlog::debug("rpc called rpc=GetStatus");
    resp->set_version(Version());
    resp->set_pid(::getpid());
    resp->set_uptime_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    for (std::string dir : options_.socket_dirs) {
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      resp->add_socket_paths(dir + "/" + core::kSocketFileName);
    }
    resp->set_topology_source(options_.topology_source);
    if (options_.enforcement != nullptr) {
      const service::EnforcementReport report = options_.enforcement->Report(false);
      FillStatus(service_.Snapshot(), &report, resp);
    } else {
      FillStatus(service_.Snapshot(), nullptr, resp);
    }
    if (options_.kubelet_registration) {
      const RegistrationHealth h = options_.kubelet_registration();
      auto* k = resp->mutable_kubelet_registration();
      k->set_state(std::string(PhaseName(h.phase)));
      k->set_error(h.error);
      k->set_get_info_calls(h.get_info_calls);
      k->set_seconds_since_get_info(h.seconds_since_get_info);
    }
    if (options_.tenant_policy) {
      const service::TenantPolicyReport t = options_.tenant_policy();
      resp->set_tenant_policy(t.source);
      resp->set_tenant_policy_error(t.error);
    }
    if (options_.nri) {
      const service::NriReport r = options_.nri();
      auto* n = resp->mutable_nri();
      n->set_socket(r.socket);
      n->set_connected(r.connected);
      n->set_runtime_name(r.runtime_name);
      n->set_runtime_version(r.runtime_version);
      n->set_runtime_timeout_ms(r.runtime_timeout_ms);
      n->set_event_budget_ms(r.event_budget_ms);
      n->set_fail_closed(r.fail_closed);
      n->set_connects(r.connects);
      n->set_events(r.events);
      n->set_late_replies(r.late_replies);
      n->set_refused_starts(r.refused_starts);
      n->set_shed_events(r.shed_events);
      n->set_invalid_events(r.invalid_events);
      n->set_last_error(r.last_error);
    }
    FillFormatStamp(OwnFormatStamp(), resp->mutable_own_format());
    resp->mutable_own_format()->set_present(true);
    if (options_.format_stamps) {
      for (const FormatStampReading& r : options_.format_stamps()) {
        auto* f = resp->add_format_stamps();
        f->set_kind(r.kind);
        f->set_path(r.path);
        f->set_error(r.error);
        if (r.stamp) {
          f->set_present(true);
          FillFormatStamp(*r.stamp, f);
        }
      }
    }
    return grpc::Status::OK;
  });
}

grpc::Status AdminService::ListClasses(grpc::ServerContext*, const admin::ListClassesRequest* req,
                                       admin::ListClassesResponse* resp) {
  return RunGuarded("ListClasses", [&] {
    spdlog::debug("rpc called rpc=ListClasses without_counters={}", req->without_counters());
    if (options_.enforcement == nullptr) {
      resp->set_mode("none");
      return grpc::Status::OK;
    }
    FillClasses(options_.enforcement->Report(!req->without_counters()), resp);
    return grpc::Status::OK;
  });
}

grpc::Status AdminService::GetTenantPolicy(grpc::ServerContext*,
                                           const admin::GetTenantPolicyRequest*,
                                           admin::GetTenantPolicyResponse* resp) {
  return RunGuarded("GetTenantPolicy", [&] {
    spdlog::debug("rpc called rpc=GetTenantPolicy");
    if (!options_.tenant_policy) {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this netqosd reports no tenant policy");
    }
    const service::TenantPolicyReport t = options_.tenant_policy();
    resp->set_path(t.path);
    resp->set_source(t.source);
    resp->set_generation(t.generation);
    resp->set_loaded_at(t.loaded_at);
    resp->set_error(t.error);
    resp->set_load_errors_total(t.load_errors_total);
    resp->set_policy_json(t.policy_json);
    return grpc::Status::OK;
  });
}

}  // namespace netqos::grpcadapter
