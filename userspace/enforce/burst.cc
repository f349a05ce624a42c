#include "enforce/burst.h"

#include "core/bandwidth_quantity.h"
#include "shaping/level_items.h"

namespace netqos::enforce {

Result<uint32_t> ParseBurst(std::string_view text) {
  if (text == "auto") return 0u;
  auto bytes = core::ParseByteQuantity(text, shaping::kMinBurstBytes, shaping::kMaxBurstBytes);
  if (!bytes.ok()) {
    return InvalidArgument("burst must be auto or a size in bytes (e.g. 1600, 64Ki, 1M) from " +
                           std::to_string(shaping::kMinBurstBytes) +
                           " (one packet) to 1Gi: " + bytes.status().message());
  }
  return static_cast<uint32_t>(*bytes);
}

std::string BurstText(uint32_t burst_bytes) {
  if (burst_bytes == 0) return "auto (1 ms at the rate + 1600 bytes)";
  return std::to_string(burst_bytes) + " bytes";
}

Status ParseLevelBurstItems(const std::vector<std::string>& items, const char* flag,
                            LevelBurst* out) {
  return shaping::ParseLevelItems(items, flag, "<bytes> or <level>=auto", ParseBurst, out);
}

PodBurst ReadPodBurst(const core::StringMap& annotations) {
  PodBurst out;
  auto it = annotations.find(kBurstAnnotation);
  if (it == annotations.end()) return out;
  auto burst = ParseBurst(it->second);
  if (burst.ok()) {
    out.bytes = *burst;
  } else {
    out.error = burst.status().message();
  }
  return out;
}

}  // namespace netqos::enforce
