#include "ctl/render.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "render/table.h"

namespace netqos::ctl {

nlohmann::json ToJson(const google::protobuf::Map<std::string, std::string>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

nlohmann::json ToJson(const rp::TopologyHint& hint) {
  nlohmann::json nodes = nlohmann::json::array();
  for (auto n : hint.nodes()) nodes.push_back(n);
  return {{"nodes", nodes}, {"preferred", hint.preferred()}};
}

nlohmann::json ToJson(const rp::ResourceHintsEntry& entry) {
  if (!entry.has_value()) return nullptr;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& h : entry.value().hints()) list.push_back(ToJson(h));
  return list;
}

nlohmann::json ToJson(const rp::TopologyAwareQuantity& q) {
  return {{"resource_value", q.resource_value()},
          {"node", q.node()},
          {"name", q.name()},
          {"type", q.type()},
          {"topology_level", rp::TopologyLevel_Name(q.topology_level())},
          {"annotations", ToJson(q.annotations())}};
}

nlohmann::json ToJson(const rp::ResourceAllocation& alloc) {
  nlohmann::json j = nlohmann::json::object();
  // Sorted by resource name so the document is stable.
  std::map<std::string, const rp::ResourceAllocationInfo*> sorted;
  for (const auto& [name, info] : alloc.resource_allocation()) sorted[name] = &info;
  for (const auto& [name, info] : sorted) {
    nlohmann::json hints = nlohmann::json::array();
    for (const auto& h : info->resource_hints().hints()) hints.push_back(ToJson(h));
    j[name] = {{"is_node_resource", info->is_node_resource()},
               {"is_scalar_resource", info->is_scalar_resource()},
               {"allocated_quantity", info->allocated_quantity()},
               {"allocation_result", info->allocation_result()},
               {"annotations", ToJson(info->annotations())},
               {"resource_hints", hints}};
  }
  return j;
}

std::string NodesText(const rp::TopologyHint& hint) {
  if (hint.nodes_size() == 0) return "-";
  std::string out;
  for (auto n : hint.nodes()) {
    if (!out.empty()) out += ",";
    out += std::to_string(n);
  }
  return out;
}

std::string NumberText(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string MapText(const google::protobuf::Map<std::string, std::string>& m) {
  if (m.empty()) return "-";
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  std::string out;
  for (const auto& [k, v] : sorted) {
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out;
}

void PrintHintsEntry(const rp::ResourceHintsEntry& entry, std::ostream& out) {
  if (!entry.has_value()) {
    out << entry.key() << ": no topology preference (nil)\n";
    return;
  }
  if (entry.value().hints_size() == 0) {
    out << entry.key() << ": no NIC can satisfy the request (empty)\n";
    return;
  }
  out << entry.key() << ": " << entry.value().hints_size() << " hint"
      << (entry.value().hints_size() == 1 ? "" : "s") << "\n";
  render::Table t({"NODES", "PREFERRED"});
  for (const auto& h : entry.value().hints()) {
    t.AddRow({NodesText(h), h.preferred() ? "true" : "false"});
  }
  t.Print(out);
}

}  // namespace netqos::ctl
