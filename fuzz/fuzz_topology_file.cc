// libFuzzer target: the --topology-file parser (ParseTopologyJson) and the policy's validation of
// what it returns (StaticPolicy::Create: NUMA ids, NIC identities, speeds, IP strings, the
// reservation on the first NIC).
//
// Invariants:
// - no crash; a bad file is an InvalidArgument naming the file;
// - parse -> write every field back as JSON -> parse gives the same topology;
// - a topology the policy accepts has consistent books on every NIC (free = allocatable -
//   allocated, allocatable <= capacity, nothing allocated yet), reports allocatable resources,
//   and accepts being re-applied (UpdateTopology) without any change.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/policy.h"
#include "fuzz_check.h"
#include "support/katalyst_fixture_node.h"
#include "topology/topology_file_source.h"

namespace {

using namespace netqos;
using nlohmann::json;

constexpr char kOrigin[] = "fuzz.json";
constexpr char kNetnsDir[] = "/run/netns";

std::string Write(const core::Topology& topo) {
  json doc = json::object();
  doc["numa_nodes"] = json::array();
  for (const auto& n : topo.numa_nodes)
    doc["numa_nodes"].push_back({{"id", n.id}, {"socket", n.socket}});
  doc["nics"] = json::array();
  for (const auto& nic : topo.nics) {
    doc["nics"].push_back({{"name", nic.id.name},
                           {"netns", nic.id.netns},
                           {"netns_path", nic.netns_path},
                           {"speed_mbps", nic.speed_mbps},
                           {"numa_node", nic.numa_node},
                           {"ifindex", nic.ifindex},
                           {"enabled", nic.enabled},
                           {"healthy", nic.healthy},
                           {"unhealthy_reason", nic.unhealthy_reason},
                           {"pci_address", nic.pci_address},
                           {"ipv4", nic.ipv4},
                           {"ipv6", nic.ipv6}});
  }
  return doc.dump();
}

bool SameNic(const core::Nic& a, const core::Nic& b) {
  return a.id == b.id && a.ifindex == b.ifindex && a.speed_mbps == b.speed_mbps &&
         a.numa_node == b.numa_node && a.enabled == b.enabled && a.ipv4 == b.ipv4 &&
         a.ipv6 == b.ipv6 && a.netns_path == b.netns_path && a.pci_address == b.pci_address &&
         a.healthy == b.healthy && a.unhealthy_reason == b.unhealthy_reason;
}

bool Same(const core::Topology& a, const core::Topology& b) {
  if (a.numa_nodes.size() != b.numa_nodes.size() || a.nics.size() != b.nics.size()) return false;
  for (size_t i = 0; i < a.numa_nodes.size(); ++i) {
    if (a.numa_nodes[i].id != b.numa_nodes[i].id ||
        a.numa_nodes[i].socket != b.numa_nodes[i].socket) {
      return false;
    }
  }
  for (size_t i = 0; i < a.nics.size(); ++i) {
    if (!SameNic(a.nics[i], b.nics[i])) return false;
  }
  return true;
}

void CheckBooks(const core::StaticPolicy& policy) {
  for (const auto& [nic, state] : policy.machine_state()) {
    for (const core::BandwidthInfo* dir : {&state.egress, &state.ingress}) {
      FUZZ_CHECK(dir->allocated == 0, "nothing is allocated on a new node");
      FUZZ_CHECK(dir->allocatable <= dir->capacity, "allocatable <= capacity");
      FUZZ_CHECK(dir->free == dir->allocatable - dir->allocated, "free = allocatable - allocated");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto topo = topology::ParseTopologyJson(text, kOrigin, kNetnsDir);
  if (!topo.ok()) {
    FUZZ_CHECK(topo.status().code() == StatusCode::kInvalidArgument,
               "a bad file is InvalidArgument");
    FUZZ_CHECK(topo.status().message().find(kOrigin) != std::string::npos,
               "the error names the file");
    return 0;
  }

  const std::string written = Write(*topo);
  auto again = topology::ParseTopologyJson(written, kOrigin, kNetnsDir);
  FUZZ_CHECK(again.ok(), "a written topology parses");
  FUZZ_CHECK(Same(*again, *topo), "parse -> write -> parse is identity");

  auto policy = core::StaticPolicy::Create(testing::FixtureConfig(), *topo);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() != StatusCode::kInternal, "a bad topology is a named error");
    return 0;
  }
  CheckBooks(*policy);
  auto allocatable = policy->GetTopologyAwareAllocatableResources();
  FUZZ_CHECK(allocatable.ok(), "allocatable resources are reported");
  const core::MachineState before = policy->machine_state();
  FUZZ_CHECK(policy->UpdateTopology(*topo).ok(), "an accepted topology can be re-applied");
  FUZZ_CHECK(policy->machine_state() == before, "re-applying a topology changes nothing");
  return 0;
}
