// Net class id resolution: the pod's own annotation, else the id configured for its
// QoS level. Public so that whatever writes class ids resolves them exactly as allocation does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"
#include "core/config.h"
#include "core/types.h"

namespace netqos::core {

// Parses a pod-level class id: decimal digits only (no sign, space or hex) and at most 2^32-1.
// Upstream truncates larger values modulo 2^32; netqos rejects them.
Result<uint32_t> ParseNetClassId(std::string_view text);

// `original_annotations` are the pod's annotations before QoS filtering.
Result<uint32_t> ResolveNetClassId(const PolicyConfig& config,
                                   const StringMap& original_annotations,
                                   std::string_view qos_level);

}  // namespace netqos::core
