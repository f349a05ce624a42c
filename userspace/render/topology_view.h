// Rendering of the daemon's NIC view (netqos.admin.v1.GetTopologyResponse), shared by
// `netqosctl topology` and `netqosd --print-topology` so both print the same thing.
#pragma once

#include <ostream>

#include "netqos/admin/v1/admin.pb.h"

namespace netqos::render {

void PrintTopology(const ::netqos::admin::v1::GetTopologyResponse& topo, bool json,
                   std::ostream& out);

}  // namespace netqos::render
