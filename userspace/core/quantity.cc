#include "core/quantity.h"

#include <cmath>

#include "common/log_value.h"
#include "core/constants.h"

namespace netqos::core {

Result<uint32_t> ParseBandwidthRequest(std::string_view resource_name,
                                       const std::map<std::string, double>& requests) {
  if (resource_name != kResourceName) {
    return InvalidArgument("unknown resource name \"" + std::string(resource_name) +
                           "\", expected " + kResourceName);
  }
  if (requests.size() != 1) {
    return InvalidArgument("resource_requests must have exactly one entry (" +
                           std::string(kResourceName) + "), got " +
                           std::to_string(requests.size()));
  }
  const auto& [name, value] = *requests.begin();
  if (name != kResourceName) {
    return InvalidArgument("unknown resource name \"" + name +
                           "\" in resource_requests, expected " + kResourceName);
  }
  if (!std::isfinite(value)) {
    return InvalidArgument("bandwidth request for " + name + " is not a finite number");
  }
  if (value < 0) {
    return InvalidArgument("bandwidth request for " + name + " is negative (" +
                           std::to_string(value) + ")");
  }
  double rounded = std::ceil(value);
  if (rounded > 4294967295.0) {
    return InvalidArgument("bandwidth request for " + name + " exceeds 4294967295 Mbps");
  }
  return static_cast<uint32_t>(rounded);
}

Result<bool> IsImplicitRequest(const StringMap& annotations) {
  auto it = annotations.find(kQuantityFromQrmDeclarationKey);
  if (it == annotations.end() || it->second == "false") return false;
  if (it->second == "true") return true;
  return InvalidArgument(std::string("invalid annotation ") + kQuantityFromQrmDeclarationKey + " " +
                         QuotedValue(it->second) + "; valid values: true, false");
}

}  // namespace netqos::core
