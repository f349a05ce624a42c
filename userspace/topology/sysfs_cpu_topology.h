// CPU topology discovery from sysfs: which NUMA nodes exist and which socket (physical package)
// each one sits on. Plain file reads; the caller passes the sysfs root so tests can use a fixture.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::topology {

// NUMA nodes and the socket (physical package) each belongs to, from <sysfs_root>/devices/system.
// Machines without NUMA information (no node directories) are one node 0 on the socket of the
// first online CPU (0 if unknown). Offline CPUs are skipped; a node without CPUs gets the socket
// by upstream's fallback (node / (nodes / sockets)), documented in the .cc.
// Nodes are returned sorted by id.
Result<std::vector<core::NumaNode>> ReadNumaNodes(const std::string& sysfs_root);

// Parses a kernel CPU list ("0-3,8,10-11"); whitespace around the list is ignored, an empty list
// is empty. InvalidArgument on malformed input.
Result<std::vector<int>> ParseCpuList(const std::string& text);

}  // namespace netqos::topology
