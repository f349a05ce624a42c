#include "enforce/pod_annotation_keys.h"

#include <string_view>

#include "core/constants.h"
#include "enforce/tenant_policy.h"

namespace netqos::enforce {

std::set<std::string, std::less<>> PodAnnotationKeys(const core::PolicyConfig& policy) {
  std::set<std::string, std::less<>> keys;
  for (std::string_view name : TenantKeyNames()) keys.emplace(name);
  keys.emplace(core::kQosLevelKey);
  for (const auto& [level, selector] : policy.qos.extra_selectors) {
    for (const auto& [key, value] : selector) keys.insert(key);
  }
  keys.insert(policy.pod_net_class_annotation_key);
  return keys;
}

}  // namespace netqos::enforce
