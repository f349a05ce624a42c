// Rendering of the daemon's NIC view (netqos.admin.v1.GetTopologyResponse), shared by
// `netqosctl topology` and `netqosd --print-topology` so both print the same thing.
#pragma once

#include <ostream>

#include "netqos/admin/v1/admin.pb.h"

namespace netqos::render {

// `wide` (netqosctl -o wide) adds the columns the table leaves out: MANAGED, PCI, NETNS PATH.
void PrintTopology(const ::netqos::admin::v1::GetTopologyResponse& topo, bool json,
                   std::ostream& out, bool wide = false);

}  // namespace netqos::render
