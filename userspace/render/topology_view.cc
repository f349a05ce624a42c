#include "render/topology_view.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/json_values.h"
#include "render/table.h"

namespace netqos::render {
namespace {

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

std::string Known(int64_t v) { return v < 0 ? "?" : std::to_string(v); }

// The WHY column: why a NIC is unhealthy, and why one takes no bandwidth although healthy: a
// speed the kernel does not know (virtio, some bonds) is a capacity of 0, and `SPEED ?` alone
// does not say so. The remedy depends on where the topology came from (app/topology_setup.cc
// names a file source "file <path>").
std::string Why(const ::netqos::admin::v1::TopologyNic& n, const std::string& source) {
  std::string why = n.healthy() ? "" : n.unhealthy_reason();
  if (n.speed_mbps() <= 0) {
    const bool from_file = source.rfind("file ", 0) == 0;
    const std::string speed = n.speed_mbps() < 0 ? "speed unknown" : "speed 0";
    why += std::string(why.empty() ? "" : "; ") + speed + ", so capacity 0: " +
           (from_file ? "set its speed_mbps in the topology file"
                      : "give it with --nic-speed-override=" + n.name() + "=MBPS");
  }
  return why.empty() ? "-" : why;
}

}  // namespace

nlohmann::json TopologyDocument(const ::netqos::admin::v1::GetTopologyResponse& topo) {
  nlohmann::json numa = nlohmann::json::array();
  for (const auto& n : topo.numa_nodes()) numa.push_back({{"id", n.id()}, {"socket", n.socket()}});
  nlohmann::json nics = nlohmann::json::array();
  for (const auto& n : topo.nics()) {
    nics.push_back({{"nic", n.nic()},
                    {"netns", StringOrNull(n.netns())},
                    {"name", n.name()},
                    {"ifindex", n.ifindex()},
                    {"speed_mbps", NonNegativeOrNull(n.speed_mbps())},
                    {"numa_node", NonNegativeOrNull(int64_t{n.numa_node()})},
                    {"socket", NonNegativeOrNull(int64_t{n.socket()})},
                    {"ipv4", std::vector<std::string>(n.ipv4().begin(), n.ipv4().end())},
                    {"ipv6", std::vector<std::string>(n.ipv6().begin(), n.ipv6().end())},
                    {"healthy", n.healthy()},
                    {"unhealthy_reason", StringOrNull(n.unhealthy_reason())},
                    {"managed", n.managed()},
                    {"netns_path", StringOrNull(n.netns_path())},
                    {"pci_address", StringOrNull(n.pci_address())}});
  }
  return {{"source", topo.source()}, {"numa_nodes", numa}, {"nics", nics}};
}

void PrintTopology(const ::netqos::admin::v1::GetTopologyResponse& topo, bool json,
                   std::ostream& out, bool wide) {
  if (json) {
    out << JsonText(TopologyDocument(topo)) << "\n";
    return;
  }
  out << "source: " << topo.source() << "\nNUMA nodes (socket):";
  for (const auto& n : topo.numa_nodes()) out << " " << n.id() << "(" << n.socket() << ")";
  out << "\n";
  if (topo.nics().empty()) {
    out << "no NICs\n";
    return;
  }
  std::vector<std::string> header = {"NETNS",  "NIC",  "IFINDEX", "SPEED",  "NUMA",
                                     "SOCKET", "IPV4", "IPV6",    "HEALTH", "WHY"};
  if (wide) header.insert(header.end(), {"MANAGED", "PCI", "NETNS PATH"});
  Table t(header);
  for (const auto& n : topo.nics()) {
    std::vector<std::string> row = {n.netns().empty() ? "<host>" : n.netns(),
                                    n.name(),
                                    std::to_string(n.ifindex()),
                                    Known(n.speed_mbps()),
                                    Known(n.numa_node()),
                                    std::to_string(n.socket()),
                                    Join(n.ipv4()),
                                    Join(n.ipv6()),
                                    n.healthy() ? "healthy" : "unhealthy",
                                    Why(n, topo.source())};
    if (wide) {
      row.insert(row.end(),
                 {n.managed() ? "yes" : "no", n.pci_address().empty() ? "-" : n.pci_address(),
                  n.netns_path().empty() ? "-" : n.netns_path()});
    }
    t.AddRow(row);
  }
  t.Print(out);
}

}  // namespace netqos::render
