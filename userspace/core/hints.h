// Topology hints for a request (Katalyst v0.5.3 calculateHints): one hint per socket that has
// a fitting NIC, then the all-NUMA hint unless the request is restricted.
#pragma once

#include <vector>

#include "core/nic_filters.h"
#include "core/types.h"

namespace netqos::core {

// `selected` are the NICs that passed the filter chain. Socket hints come sorted by node list
// (preferred if any NIC on that socket is preferred), followed by the all-NUMA hint
// (not preferred) unless topology_affinity_restricted is "true" or namespace_type is host_ns
// or anti_host_ns.
std::vector<TopologyHint> BuildHints(const std::vector<const NicCandidate*>& selected,
                                     const StringMap& annotations,
                                     const std::vector<uint64_t>& all_nodes);

}  // namespace netqos::core
