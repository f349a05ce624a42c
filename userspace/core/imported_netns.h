// Katalyst v0.5.3 records an allocation's NIC by name only (no ns_name), so an entry for a NIC in
// another network namespace would otherwise land on the host NIC of the same name, or on none.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

// Gives each listed entry (pod uid, container name) of `entries` the namespace of the one NIC of
// its if_name in `nics` (the node's topology, managed or not). No NIC of that name: the entry
// stays on the host namespace, counted on no NIC until one appears. Several: InvalidArgument
// naming the entry and the namespaces, since picking one could book bandwidth on the wrong NIC.
Status ResolveImportedNetns(const std::vector<Nic>& nics,
                            const std::vector<std::pair<std::string, std::string>>& without_netns,
                            PodEntries& entries);

}  // namespace netqos::core
