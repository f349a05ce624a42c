// NUMA node sets in the Linux list format ("0-1,3") that Katalyst writes into AllocationResult
// and into the checkpoint's numa_node field.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

// Formats ascending runs of two or more consecutive ids as "a-b" (so {0,1} is "0-1", as Go's
// CPUSet.String prints it) and single ids as "n"; the empty set is "".
std::string FormatNumaList(const NumaSet& set);

// Parses what FormatNumaList prints, also accepting unmerged or overlapping items ("0,1,1-2").
// Only decimal digits, ',' and '-' are accepted; "" is the empty set.
Result<NumaSet> ParseNumaList(std::string_view text);

}  // namespace netqos::core
