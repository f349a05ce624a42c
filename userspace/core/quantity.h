// The bandwidth a request asks for, in Mbps, validated strictly (Katalyst's parsing, with netqos's
// checks).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

// resource_name must be kResourceName and `requests` must hold exactly that one key; the value
// must be finite, >= 0 and at most 2^32-1 after rounding up. Returns ceil(value).
Result<uint32_t> ParseBandwidthRequest(std::string_view resource_name,
                                       const std::map<std::string, double>& requests);

// Whether the pod declares its bandwidth implicitly (Katalyst HEAD's quantity-from-qrm-declaration
// annotation, read from the pod's own annotations): "true" yes, "false" or absent no; any other
// value is refused, since a typo would silently reserve (or not reserve) the bandwidth.
Result<bool> IsImplicitRequest(const StringMap& annotations);

}  // namespace netqos::core
