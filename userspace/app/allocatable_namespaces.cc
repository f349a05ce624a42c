#include "app/allocatable_namespaces.h"

#include <algorithm>

namespace netqos::app {

bool NamespaceAllocatable(const std::string& netns, const std::vector<std::string>& items) {
  if (netns.empty()) return true;
  bool wildcard = false;
  for (const auto& item : items) {
    if (item == "-" + netns) return false;
    if (item == netns) return true;
    wildcard = wildcard || item == "*";
  }
  return wildcard;
}

core::Topology FilterAllocatableNamespaces(core::Topology topology,
                                           const std::vector<std::string>& items) {
  auto& nics = topology.nics;
  nics.erase(std::remove_if(
                 nics.begin(), nics.end(),
                 [&](const core::Nic& nic) { return !NamespaceAllocatable(nic.id.netns, items); }),
             nics.end());
  return topology;
}

}  // namespace netqos::app
