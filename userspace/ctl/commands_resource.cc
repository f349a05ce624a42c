// The kubelet-side subcommands: hints, allocate, remove, topology-aware, options.
#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "core/constants.h"
#include "core/numa_set.h"
#include "ctl/commands.h"
#include "ctl/ctl.h"
#include "ctl/render.h"
#include "render/table.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"

namespace netqos::ctl {
namespace {

using Json = nlohmann::json;

// The request fields both RPC levels share, validated once.
struct Built {
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::optional<rp::TopologyHint> hint;
  rp::ContainerType container_type = rp::MAIN;
};

bool SplitPairs(const std::vector<std::string>& items, const char* flag,
                std::map<std::string, std::string>* out, std::ostream& err) {
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "netqosctl: " << flag << " expects key=value, got '" << item << "'\n";
      return false;
    }
    (*out)[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return true;
}

std::optional<Built> Build(const RequestFlags& f, std::ostream& err) {
  Built b;
  if (!SplitPairs(f.annotations, "--annotation", &b.annotations, err)) return std::nullopt;
  if (!SplitPairs(f.labels, "--label", &b.labels, err)) return std::nullopt;
  if (!f.qos.empty()) {
    b.annotations[core::kQosLevelKey] = f.qos;
    b.labels[core::kQosLevelKey] = f.qos;
  }
  if (!f.hint.empty() || f.preferred) {
    auto nodes = core::ParseNumaList(f.hint);
    if (!nodes.ok()) {
      err << "netqosctl: --hint: " << nodes.status().message() << "\n";
      return std::nullopt;
    }
    rp::TopologyHint hint;
    for (int n : *nodes) hint.add_nodes(static_cast<uint64_t>(n));
    hint.set_preferred(f.preferred);
    b.hint = hint;
  }
  std::string type = f.container_type;
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (!rp::ContainerType_Parse(type, &b.container_type)) {
    err << "netqosctl: --container-type must be MAIN, INIT, SIDECAR or EPHEMERAL, got '"
        << f.container_type << "'\n";
    return std::nullopt;
  }
  if (!f.pod_level && f.container.empty()) {
    err << "netqosctl: --container is required (or --pod for the pod-level RPCs)\n";
    return std::nullopt;
  }
  return b;
}

template <typename Req>
void FillCommon(const RequestFlags& f, const Built& b, Req* req) {
  req->set_pod_uid(f.pod_uid);
  req->set_pod_namespace(f.pod_namespace);
  req->set_pod_name(f.pod_name);
  req->set_resource_name(core::kResourceName);
  (*req->mutable_resource_requests())[core::kResourceName] = f.mbps;
  for (const auto& [k, v] : b.annotations) (*req->mutable_annotations())[k] = v;
  for (const auto& [k, v] : b.labels) (*req->mutable_labels())[k] = v;
  if (b.hint) *req->mutable_hint() = *b.hint;
}

rp::ResourceRequest ContainerRequest(const RequestFlags& f, const Built& b) {
  rp::ResourceRequest req;
  FillCommon(f, b, &req);
  req.set_container_name(f.container);
  req.set_container_type(b.container_type);
  req.set_container_index(f.container_index);
  return req;
}

rp::PodResourceRequest PodRequest(const RequestFlags& f, const Built& b) {
  rp::PodResourceRequest req;
  FillCommon(f, b, &req);
  return req;
}

template <typename Resp>
Json PodJson(const Resp& r) {
  return {{"pod_uid", r.pod_uid()},       {"pod_namespace", r.pod_namespace()},
          {"pod_name", r.pod_name()},     {"resource_name", r.resource_name()},
          {"labels", ToJson(r.labels())}, {"annotations", ToJson(r.annotations())}};
}

template <typename Resp>
void AddContainerJson(const Resp& r, Json* j) {
  (*j)["container_name"] = r.container_name();
  (*j)["container_type"] = rp::ContainerType_Name(r.container_type());
  (*j)["container_index"] = r.container_index();
}

template <typename Resp>
Json HintsJson(const Resp& r) {
  Json j = PodJson(r);
  Json hints = Json::object();
  for (const auto& e : r.resource_hints()) hints[e.key()] = ToJson(e);
  j["resource_hints"] = hints;
  return j;
}

template <typename Resp>
void PrintPodLine(const Resp& r, std::ostream& out) {
  out << "pod " << r.pod_namespace() << "/" << r.pod_name() << " uid=" << r.pod_uid();
}

template <typename Resp>
void PrintAllocation(const Resp& r, std::ostream& out) {
  if (!r.has_allocation_result()) {
    out << "no allocation result (nothing is reserved for this container)\n";
    return;
  }
  for (const auto& [name, info] : r.allocation_result().resource_allocation()) {
    std::string hints;
    for (const auto& h : info.resource_hints().hints()) {
      if (!hints.empty()) hints += " ";
      hints += NodesText(h) + (h.preferred() ? " (preferred)" : "");
    }
    render::PrintKeyValues(
        {{"resource", name},
         {"allocated", NumberText(info.allocated_quantity()) + " Mbps"},
         {"numa nodes", info.allocation_result().empty() ? "-" : info.allocation_result()},
         {"hint", hints.empty() ? "-" : hints}},
        out);
    if (!info.annotations().empty()) {
      out << "annotations:\n";
      render::Table t({"KEY", "VALUE"});
      std::map<std::string, std::string> sorted(info.annotations().begin(),
                                                info.annotations().end());
      for (const auto& [k, v] : sorted) t.AddRow({k, v.empty() ? "\"\"" : v});
      t.Print(out);
    }
  }
}

}  // namespace

int CmdHints(const GlobalOptions& g, const RequestFlags& f, std::ostream& out, std::ostream& err) {
  auto built = Build(f, err);
  if (!built) return kExitUsage;
  if (f.pod_level) {
    rp::PodResourceHintsResponse resp;
    if (int rc = CallOnce<rp::ResourcePlugin>(g, "GetPodTopologyHints",
                                              &rp::ResourcePlugin::Stub::GetPodTopologyHints,
                                              PodRequest(f, *built), &resp, err)) {
      return rc;
    }
    if (g.structured()) {
      out << DocumentText(g.format, HintsJson(resp));
      return kExitOk;
    }
    PrintPodLine(resp, out);
    out << " (pod level)\n";
    for (const auto& e : resp.resource_hints()) PrintHintsEntry(e, out);
    return kExitOk;
  }
  rp::ResourceHintsResponse resp;
  if (int rc = CallOnce<rp::ResourcePlugin>(g, "GetTopologyHints",
                                            &rp::ResourcePlugin::Stub::GetTopologyHints,
                                            ContainerRequest(f, *built), &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    Json j = HintsJson(resp);
    AddContainerJson(resp, &j);
    out << DocumentText(g.format, j);
    return kExitOk;
  }
  PrintPodLine(resp, out);
  out << " container=" << resp.container_name()
      << " type=" << rp::ContainerType_Name(resp.container_type()) << "\n";
  for (const auto& e : resp.resource_hints()) PrintHintsEntry(e, out);
  return kExitOk;
}

int CmdAllocate(const GlobalOptions& g, const RequestFlags& f, std::ostream& out,
                std::ostream& err) {
  auto built = Build(f, err);
  if (!built) return kExitUsage;
  if (f.pod_level) {
    rp::PodResourceAllocationResponse resp;
    if (int rc = CallOnce<rp::ResourcePlugin>(g, "AllocateForPod",
                                              &rp::ResourcePlugin::Stub::AllocateForPod,
                                              PodRequest(f, *built), &resp, err)) {
      return rc;
    }
    if (g.structured()) {
      Json j = PodJson(resp);
      j["allocation_result"] =
          resp.has_allocation_result() ? ToJson(resp.allocation_result()) : Json(nullptr);
      out << DocumentText(g.format, j);
      return kExitOk;
    }
    PrintPodLine(resp, out);
    out << " (pod level)\n";
    PrintAllocation(resp, out);
    return kExitOk;
  }
  rp::ResourceAllocationResponse resp;
  if (int rc = CallOnce<rp::ResourcePlugin>(g, "Allocate", &rp::ResourcePlugin::Stub::Allocate,
                                            ContainerRequest(f, *built), &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    Json j = PodJson(resp);
    AddContainerJson(resp, &j);
    j["allocation_result"] =
        resp.has_allocation_result() ? ToJson(resp.allocation_result()) : Json(nullptr);
    out << DocumentText(g.format, j);
    return kExitOk;
  }
  PrintPodLine(resp, out);
  out << " container=" << resp.container_name()
      << " type=" << rp::ContainerType_Name(resp.container_type()) << "\n";
  PrintAllocation(resp, out);
  return kExitOk;
}

int CmdRemove(const GlobalOptions& g, const std::string& pod_uid, std::ostream& out,
              std::ostream& err) {
  rp::RemovePodRequest req;
  req.set_pod_uid(pod_uid);
  rp::RemovePodResponse resp;
  if (int rc = CallOnce<rp::ResourcePlugin>(g, "RemovePod", &rp::ResourcePlugin::Stub::RemovePod,
                                            req, &resp, err)) {
    return rc;
  }
  if (g.structured()) {
    out << DocumentText(g.format, Json{{"removed_pod_uid", pod_uid}});
  } else {
    out << "removed pod uid=" << pod_uid << "\n";
  }
  return kExitOk;
}

int CmdTopologyAware(const GlobalOptions& g, const std::string& pod_uid,
                     const std::string& container, std::ostream& out, std::ostream& err) {
  rp::GetTopologyAwareResourcesRequest req;
  req.set_pod_uid(pod_uid);
  req.set_container_name(container);
  rp::GetTopologyAwareResourcesResponse resp;
  if (int rc = CallOnce<rp::ResourcePlugin>(g, "GetTopologyAwareResources",
                                            &rp::ResourcePlugin::Stub::GetTopologyAwareResources,
                                            req, &resp, err)) {
    return rc;
  }
  const bool found = resp.has_container_topology_aware_resources();
  const auto& c = resp.container_topology_aware_resources();
  std::map<std::string, const rp::TopologyAwareResource*> resources;
  for (const auto& [name, r] : c.allocated_resources()) resources[name] = &r;
  if (g.structured()) {
    Json j = Json::object();
    if (found) {
      j["pod_uid"] = resp.pod_uid();
      j["pod_name"] = resp.pod_name();
      j["pod_namespace"] = resp.pod_namespace();
      j["container_name"] = c.container_name();
      Json res = Json::object();
      for (const auto& [name, r] : resources) {
        Json list = Json::array();
        Json original = Json::array();
        for (const auto& q : r->topology_aware_quantity_list()) list.push_back(ToJson(q));
        for (const auto& q : r->original_topology_aware_quantity_list()) {
          original.push_back(ToJson(q));
        }
        res[name] = {{"is_node_resource", r->is_node_resource()},
                     {"is_scalar_resource", r->is_scalar_resource()},
                     {"aggregated_quantity", r->aggregated_quantity()},
                     {"original_aggregated_quantity", r->original_aggregated_quantity()},
                     {"topology_aware_quantity_list", list},
                     {"original_topology_aware_quantity_list", original}};
      }
      j["allocated_resources"] = res;
    }
    out << DocumentText(g.format, j);
    return kExitOk;
  }
  if (!found) {
    out << "no allocation for pod uid=" << pod_uid << " container=" << container << "\n";
    return kExitOk;
  }
  out << "pod " << resp.pod_namespace() << "/" << resp.pod_name() << " uid=" << resp.pod_uid()
      << " container=" << c.container_name() << "\n";
  render::Table t({"RESOURCE", "QUANTITY", "NIC", "NODE", "LEVEL", "TYPE", "ANNOTATIONS"});
  for (const auto& [name, r] : resources) {
    if (r->topology_aware_quantity_list_size() == 0) {
      t.AddRow({name, NumberText(r->aggregated_quantity()), "-", "-", "-", "-", "-"});
    }
    for (const auto& q : r->topology_aware_quantity_list()) {
      t.AddRow({name, NumberText(q.resource_value()), q.name(), std::to_string(q.node()),
                rp::TopologyLevel_Name(q.topology_level()), q.type(), MapText(q.annotations())});
    }
  }
  t.Print(out);
  return kExitOk;
}

int CmdOptions(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  rp::ResourcePluginOptions resp;
  if (int rc = CallOnce<rp::ResourcePlugin>(g, "GetResourcePluginOptions",
                                            &rp::ResourcePlugin::Stub::GetResourcePluginOptions,
                                            rp::Empty{}, &resp, err)) {
    return rc;
  }
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  if (g.structured()) {
    out << DocumentText(g.format, Json{{"pre_start_required", resp.pre_start_required()},
                                       {"with_topology_alignment", resp.with_topology_alignment()},
                                       {"need_reconcile", resp.need_reconcile()}});
    return kExitOk;
  }
  render::PrintKeyValues({{"pre_start_required", b(resp.pre_start_required())},
                          {"with_topology_alignment", b(resp.with_topology_alignment())},
                          {"need_reconcile", b(resp.need_reconcile())}},
                         out);
  return kExitOk;
}

}  // namespace netqos::ctl
