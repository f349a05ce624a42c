// The operator subcommands (allocations, capacity, topology) and the plugin-watcher ones
// (plugin-info, notify-registered).
#include <nlohmann/json.hpp>

#include "core/constants.h"
#include "ctl/commands.h"
#include "ctl/ctl.h"
#include "ctl/render.h"
#include "netqos/admin/v1/admin.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "render/table.h"
#include "render/topology_view.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"

namespace netqos::ctl {
namespace {

using Json = nlohmann::json;
namespace admin = ::netqos::admin::v1;
namespace reg = ::pluginregistration;

std::string Or(const std::string& s, const char* dash = "-") { return s.empty() ? dash : s; }

Json BandwidthJson(const admin::Bandwidth& b) {
  return {{"capacity", b.capacity()},
          {"reservation", b.reservation()},
          {"allocatable", b.allocatable()},
          {"allocated", b.allocated()},
          {"free", b.free()}};
}

std::string Pair(uint32_t egress, uint32_t ingress) {
  return std::to_string(egress) + "/" + std::to_string(ingress);
}

// A number the admin API gives as -1 when it is not known.
std::string Known(int64_t v) { return v < 0 ? "-" : std::to_string(v); }

}  // namespace

int CmdAllocations(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  admin::ListAllocationsResponse resp;
  if (int rc = CallOnce<admin::Admin>(g, "ListAllocations", &admin::Admin::Stub::ListAllocations,
                                      admin::ListAllocationsRequest{}, &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    Json list = Json::array();
    for (const auto& a : resp.allocations()) {
      // A pod-level allocation has no container; the daemon sends "" for whatever it does not
      // know (no NIC chosen, the host's netns, no class id): null here.
      list.push_back({{"pod_uid", a.pod_uid()},
                      {"pod_namespace", a.pod_namespace()},
                      {"pod_name", StringOrNull(a.pod_name())},
                      {"container_name", StringOrNull(a.container_name())},
                      {"container_type", a.container_type()},
                      {"qos_level", StringOrNull(a.qos_level())},
                      {"nic", StringOrNull(a.nic())},
                      {"netns", StringOrNull(a.netns())},
                      {"if_name", StringOrNull(a.if_name())},
                      {"egress_mbps", a.egress_mbps()},
                      {"ingress_mbps", a.ingress_mbps()},
                      {"numa_nodes", StringOrNull(a.numa_nodes())},
                      {"net_class_id", StringOrNull(a.net_class_id())}});
    }
    out << DocumentText(g.format, Json{{"allocations", list}});
    return kExitOk;
  }
  if (resp.allocations().empty()) {
    out << "no allocations\n";
    return kExitOk;
  }
  std::vector<std::string> header = {"POD", "UID",    "CONTAINER", "TYPE", "QOS",
                                     "NIC", "EGRESS", "INGRESS",   "NUMA", "CLASSID"};
  if (g.wide()) header.insert(header.end(), {"NETNS", "INTERFACE"});
  render::Table t(header);
  for (const auto& a : resp.allocations()) {
    std::vector<std::string> row = {a.pod_namespace() + "/" + Or(a.pod_name()),
                                    a.pod_uid(),
                                    Or(a.container_name(), "<pod>"),
                                    a.container_type(),
                                    Or(a.qos_level()),
                                    Or(a.nic()),
                                    std::to_string(a.egress_mbps()),
                                    std::to_string(a.ingress_mbps()),
                                    Or(a.numa_nodes()),
                                    Or(a.net_class_id())};
    if (g.wide()) row.insert(row.end(), {Or(a.netns(), "<host>"), Or(a.if_name())});
    t.AddRow(row);
  }
  t.Print(out);
  return kExitOk;
}

namespace {

// One rule of the policy JSON as a table cell.
std::string RuleText(const Json& rules, const char* key) {
  const Json& v = rules.contains(key) ? rules.at(key) : Json(nullptr);
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    if (v.empty()) return "none";
    std::string out;
    for (const auto& e : v)
      out += (out.empty() ? "" : ",") + (e.is_string() ? e.get<std::string>() : e.dump());
    return out;
  }
  return v.dump();
}

std::string HonouredText(const Json& rules) {
  const Json& h = rules.at("honoured_annotations");
  return h.size() == 7 ? std::string("all") : RuleText(rules, "honoured_annotations");
}

std::string AggregateText(const Json& rules) {
  if (!rules.contains("aggregate") || rules.at("aggregate").is_null()) return "-";
  const Json& a = rules.at("aggregate");
  auto dir = [&](const char* ceil, const char* rate) {
    std::string t = RuleText(a, ceil);
    if (t != "-" && RuleText(a, rate) != "-") t = RuleText(a, rate) + ".." + t;
    return t;
  };
  return "tx " + dir("egress", "egress_guarantee") + " rx " + dir("ingress", "ingress_guarantee") +
         " bit/s";
}

}  // namespace

int CmdTenantPolicy(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  admin::GetTenantPolicyResponse resp;
  if (int rc = CallOnce<admin::Admin>(g, "GetTenantPolicy", &admin::Admin::Stub::GetTenantPolicy,
                                      admin::GetTenantPolicyRequest{}, &resp, err)) {
    return rc;
  }
  const Json policy = Json::parse(resp.policy_json(), nullptr, /*allow_exceptions=*/false);
  if (policy.is_discarded() || !policy.is_object() || !policy.contains("default")) {
    err << "netqosctl: the daemon's tenant policy is not the JSON it should be\n";
    return kExitRpcError;
  }
  if (g.structured()) {
    out << DocumentText(g.format, Json{{"path", StringOrNull(resp.path())},
                                       {"source", resp.source()},
                                       {"generation", resp.generation()},
                                       {"loaded_at", StringOrNull(resp.loaded_at())},
                                       {"error", StringOrNull(resp.error())},
                                       {"load_errors_total", resp.load_errors_total()},
                                       {"policy", policy}});
    return kExitOk;
  }
  render::PrintKeyValues(
      {{"source", Or(resp.source())},
       {"file",
        resp.path().empty() ? std::string("none (--tenant-policy-file not given)") : resp.path()},
       {"file state", resp.error().empty()
                          ? std::string("in force")
                          : "NOT in force, the policy above stays: " + resp.error()},
       {"loads", std::to_string(resp.generation()) + " taken, " +
                     std::to_string(resp.load_errors_total()) + " failed"}},
      out);
  out << "\n";
  render::Table t({"NAMESPACE", "HONOURED", "BORROW", "DSCP", "MAX-BURST", "IMPLICIT-MAX-MBPS",
                   "UNALLOCATED-LEVEL-MAX", "AGGREGATE"});
  auto row = [&](const std::string& name, const Json& rules) {
    t.AddRow({name, HonouredText(rules), RuleText(rules, "borrow"), RuleText(rules, "dscp"),
              RuleText(rules, "max_burst") == "-" ? "level's" : RuleText(rules, "max_burst"),
              RuleText(rules, "implicit_bandwidth_max_mbps"),
              RuleText(rules, "unallocated_qos_level_max") == "-"
                  ? "unclassified level"
                  : RuleText(rules, "unallocated_qos_level_max"),
              AggregateText(rules)});
  };
  row("(default)", policy.at("default"));
  if (policy.contains("namespaces")) {
    for (const auto& [name, rules] : policy.at("namespaces").items()) row(name, rules);
  }
  t.Print(out);
  return kExitOk;
}

int CmdTopology(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  admin::GetTopologyResponse resp;
  if (int rc = CallOnce<admin::Admin>(g, "GetTopology", &admin::Admin::Stub::GetTopology,
                                      admin::GetTopologyRequest{}, &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    out << DocumentText(g.format, render::TopologyDocument(resp));
  } else {
    render::PrintTopology(resp, false, out, g.wide());
  }
  return kExitOk;
}

int CmdCapacity(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  auto conn = Connection::Open(g, err);
  if (!conn) return kExitRpcError;
  admin::GetCapacityResponse cap;
  if (int rc = conn->Call<admin::Admin>("GetCapacity", &admin::Admin::Stub::GetCapacity, {}, &cap,
                                        err)) {
    return rc;
  }
  rp::GetTopologyAwareAllocatableResourcesResponse alloc;
  if (int rc = conn->Call<rp::ResourcePlugin>(
          "GetTopologyAwareAllocatableResources",
          &rp::ResourcePlugin::Stub::GetTopologyAwareAllocatableResources, {}, &alloc, err)) {
    return rc;
  }
  const auto it = alloc.allocatable_resources().find(core::kResourceName);
  const rp::AllocatableTopologyAwareResource* kubelet =
      it == alloc.allocatable_resources().end() ? nullptr : &it->second;

  if (g.structured()) {
    Json nics = Json::array();
    for (const auto& n : cap.nics()) {
      nics.push_back({{"nic", n.nic()},
                      {"netns", n.netns()},
                      {"name", n.name()},
                      {"speed_mbps", NonNegativeOrNull(n.speed_mbps())},
                      {"numa_node", NonNegativeOrNull(int64_t{n.numa_node()})},
                      {"socket", NonNegativeOrNull(int64_t{n.socket()})},
                      {"healthy", n.healthy()},
                      {"unhealthy_reason", StringOrNull(n.unhealthy_reason())},
                      {"egress", BandwidthJson(n.egress())},
                      {"ingress", BandwidthJson(n.ingress())},
                      {"containers", n.containers()}});
    }
    Json view = nullptr;
    if (kubelet) {
      Json a = Json::array();
      Json c = Json::array();
      for (const auto& q : kubelet->topology_aware_allocatable_quantity_list()) {
        a.push_back(ToJson(q));
      }
      for (const auto& q : kubelet->topology_aware_capacity_quantity_list()) {
        c.push_back(ToJson(q));
      }
      view = {{"aggregated_allocatable_quantity", kubelet->aggregated_allocatable_quantity()},
              {"aggregated_capacity_quantity", kubelet->aggregated_capacity_quantity()},
              {"topology_aware_allocatable_quantity_list", a},
              {"topology_aware_capacity_quantity_list", c}};
    }
    out << DocumentText(g.format, Json{{"nics", nics}, {"kubelet_allocatable", view}});
    return kExitOk;
  }

  std::vector<std::string> header = {"NIC",       "SPEED",    "NUMA",      "SOCKET",
                                     "HEALTHY",   "CAPACITY", "RESERVED",  "ALLOCATABLE",
                                     "ALLOCATED", "FREE",     "CONTAINERS"};
  if (g.wide()) header.insert(header.begin() + 1, {"NETNS", "INTERFACE"});
  render::Table t(header);
  for (const auto& n : cap.nics()) {
    const auto& e = n.egress();
    const auto& i = n.ingress();
    std::vector<std::string> row = {
        n.nic(),
        Known(n.speed_mbps()),
        Known(n.numa_node()),
        Known(n.socket()),
        n.healthy() ? "yes" : "no (" + Or(n.unhealthy_reason(), "unknown") + ")",
        Pair(e.capacity(), i.capacity()),
        Pair(e.reservation(), i.reservation()),
        Pair(e.allocatable(), i.allocatable()),
        Pair(e.allocated(), i.allocated()),
        Pair(e.free(), i.free()),
        std::to_string(n.containers())};
    if (g.wide()) row.insert(row.begin() + 1, {Or(n.netns(), "<host>"), n.name()});
    t.AddRow(row);
  }
  out << "NICs (Mbps, egress/ingress):\n";
  if (t.empty()) {
    out << "no NICs\n";
  } else {
    t.Print(out);
  }
  if (kubelet) {
    out << "\nreported to the kubelet: allocatable "
        << NumberText(kubelet->aggregated_allocatable_quantity()) << " / capacity "
        << NumberText(kubelet->aggregated_capacity_quantity()) << " Mbps\n";
    render::Table k({"NIC", "SOCKET", "ALLOCATABLE", "CAPACITY"});
    const auto& a = kubelet->topology_aware_allocatable_quantity_list();
    const auto& c = kubelet->topology_aware_capacity_quantity_list();
    for (int idx = 0; idx < a.size(); ++idx) {
      const std::string capacity = idx < c.size() ? NumberText(c[idx].resource_value()) : "-";
      // The resource identifier ("<netns>-<name>") tells same-named NICs in two namespaces apart.
      const auto id = a[idx].annotations().find(core::kResourceIdentifierKey);
      const std::string nic = id == a[idx].annotations().end() ? a[idx].name() : id->second;
      k.AddRow({nic, std::to_string(a[idx].node()), NumberText(a[idx].resource_value()), capacity});
    }
    if (!k.empty()) k.Print(out);
  }
  return kExitOk;
}

int CmdPluginInfo(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  reg::PluginInfo info;
  if (int rc = CallOnce<reg::Registration>(g, "GetInfo", &reg::Registration::Stub::GetInfo,
                                           reg::InfoRequest{}, &info, err)) {
    return rc;
  }
  Json versions = Json::array();
  std::string versions_text;
  for (const auto& v : info.supported_versions()) {
    versions.push_back(v);
    versions_text += (versions_text.empty() ? "" : ",") + v;
  }
  if (g.structured()) {
    out << DocumentText(g.format, Json{{"type", info.type()},
                                       {"name", info.name()},
                                       {"endpoint", StringOrNull(info.endpoint())},
                                       {"supported_versions", versions}});
    return kExitOk;
  }
  render::PrintKeyValues({{"type", info.type()},
                          {"name", info.name()},
                          {"endpoint", Or(info.endpoint(), "(empty: the socket itself)")},
                          {"supported_versions", Or(versions_text)}},
                         out);
  return kExitOk;
}

int CmdNotifyRegistered(const GlobalOptions& g, const std::optional<std::string>& error,
                        std::ostream& out, std::ostream& err) {
  reg::RegistrationStatus req;
  req.set_plugin_registered(!error.has_value());
  if (error) req.set_error(*error);
  reg::RegistrationStatusResponse resp;
  if (int rc = CallOnce<reg::Registration>(g, "NotifyRegistrationStatus",
                                           &reg::Registration::Stub::NotifyRegistrationStatus, req,
                                           &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    out << DocumentText(g.format, Json{{"plugin_registered", req.plugin_registered()},
                                       {"error", StringOrNull(req.error())}});
  } else {
    out << "notified plugin_registered=" << (req.plugin_registered() ? "true" : "false");
    if (error) out << " error=\"" << *error << "\"";
    out << "\n";
  }
  return kExitOk;
}

}  // namespace netqos::ctl
