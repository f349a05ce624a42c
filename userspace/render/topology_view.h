// Rendering of the daemon's NIC view (netqos.admin.v1.GetTopologyResponse), shared by
// `netqosctl topology` and `netqosd --print-topology` so both print the same thing.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <ostream>

#include "netqos/admin/v1/admin.pb.h"

namespace netqos::render {

// The NIC view as a JSON document, null where a value is not known (a speed or NUMA node of -1,
// the host's netns, no PCI address): what `netqosctl topology -o json|yaml` and
// `netqosd --print-topology --json` print.
nlohmann::json TopologyDocument(const ::netqos::admin::v1::GetTopologyResponse& topo);

// `wide` (netqosctl -o wide) adds the columns the table leaves out: MANAGED, PCI, NETNS PATH.
void PrintTopology(const ::netqos::admin::v1::GetTopologyResponse& topo, bool json,
                   std::ostream& out, bool wide = false);

}  // namespace netqos::render
