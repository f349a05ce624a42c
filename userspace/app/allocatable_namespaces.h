// --machine-net-allocatable-ns (Katalyst): which network namespaces' NICs may be allocated.
// Items: "name" enables a namespace, "-name" disables it, "*" enables every namespace not
// disabled; without "*" only listed names are enabled. The host namespace is always allocatable.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace netqos::app {

bool NamespaceAllocatable(const std::string& netns, const std::vector<std::string>& items);

// Drops NICs in namespaces that are not allocatable.
core::Topology FilterAllocatableNamespaces(core::Topology topology,
                                           const std::vector<std::string>& items);

}  // namespace netqos::app
