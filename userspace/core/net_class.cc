#include "core/net_class.h"

#include <string>

#include "common/log_value.h"

namespace netqos::core {

Result<uint32_t> ParseNetClassId(std::string_view text) {
  if (text.empty()) return InvalidArgument("empty net class id");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return InvalidArgument("net class id " + QuotedValue(text) + " is not a decimal number");
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > 4294967295ULL) {
      return InvalidArgument("net class id " + QuotedValue(text) + " exceeds 4294967295");
    }
  }
  return static_cast<uint32_t>(v);
}

Result<uint32_t> ResolveNetClassId(const PolicyConfig& config,
                                   const StringMap& original_annotations,
                                   std::string_view qos_level) {
  if (auto it = original_annotations.find(config.pod_net_class_annotation_key);
      it != original_annotations.end()) {
    auto id = ParseNetClassId(it->second);
    if (!id.ok()) {
      return id.status().Wrap("annotation " + config.pod_net_class_annotation_key);
    }
    return id;
  }
  auto it = config.qos_class_ids.find(std::string(qos_level));
  if (it == config.qos_class_ids.end()) {
    return InvalidArgument("net class id for QoS level " + std::string(qos_level) +
                           " is not configured");
  }
  return it->second;
}

}  // namespace netqos::core
