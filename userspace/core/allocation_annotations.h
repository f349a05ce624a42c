// The annotations an allocation reports to the kubelet (Katalyst v0.5.3): the NIC's addresses,
// name and namespace path, the net class id and the bandwidth.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/config.h"
#include "core/types.h"

namespace netqos::core {

// `nic` may be null when the allocation names a NIC that no longer exists: the addresses are
// then empty and the NIC name comes from `if_name`. Without `bandwidth_mbps` (an implicit
// request, Katalyst HEAD) the bandwidth key is left out.
StringMap AllocationAnnotations(const AllocationAnnotationKeys& keys, const Nic* nic,
                                std::string_view if_name, uint32_t net_class_id,
                                std::optional<uint32_t> bandwidth_mbps);

}  // namespace netqos::core
