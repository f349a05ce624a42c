// The bandwidth a request asks for, in Mbps, validated strictly (Katalyst's parsing, with netqos's checks).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace netqos::core {

// resource_name must be kResourceName and `requests` must hold exactly that one key; the value
// must be finite, >= 0 and at most 2^32-1 after rounding up. Returns ceil(value).
Result<uint32_t> ParseBandwidthRequest(std::string_view resource_name,
                                       const std::map<std::string, double>& requests);

}  // namespace netqos::core
