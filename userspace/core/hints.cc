#include "core/hints.h"

#include <map>

namespace netqos::core {

std::vector<TopologyHint> BuildHints(const std::vector<const NicCandidate*>& selected,
                                     const StringMap& annotations,
                                     const std::vector<uint64_t>& all_nodes) {
  // Keyed by the node list so the output order is deterministic (upstream's is map order).
  std::map<std::vector<uint64_t>, bool> by_nodes;
  for (const NicCandidate* c : selected) {
    // A NIC whose NUMA node has no socket (unknown NUMA on a machine without NUMA 0) aligns
    // with nothing; upstream fails the whole call, we let only the all-NUMA hint cover it.
    if (c->siblings.empty()) continue;
    std::vector<uint64_t> nodes(c->siblings.begin(), c->siblings.end());
    const bool nic_preferred = NicPreferred(*c->nic, annotations);
    bool& preferred = by_nodes[nodes];
    if (nic_preferred) preferred = true;
    if (c->own_node) {
      // With numa_node_hints: the NIC's own node too (the same as its socket's on a one-node
      // socket, which the map keeps once).
      bool& own = by_nodes[{static_cast<uint64_t>(*c->own_node)}];
      if (nic_preferred) own = true;
    }
  }
  std::vector<TopologyHint> hints;
  for (const auto& [nodes, preferred] : by_nodes) hints.push_back(TopologyHint{nodes, preferred});
  if (!AffinityRestricted(annotations) && !NamespaceRestricted(annotations)) {
    hints.push_back(TopologyHint{all_nodes, false});
  }
  return hints;
}

}  // namespace netqos::core
