#include "core/qos.h"

#include <vector>

#include "common/log_value.h"
#include "core/constants.h"
#include "core/json_object.h"

namespace netqos::core {

const std::set<std::string>& QosLevels() {
  static const std::set<std::string> kLevels = {kDedicatedCores, kReclaimedCores, kSharedCores,
                                                kSystemCores};
  return kLevels;
}

namespace {

StringMap SelectorOf(const QosConfig& config, const std::string& level) {
  StringMap selector;
  if (auto it = config.extra_selectors.find(level); it != config.extra_selectors.end()) {
    selector = it->second;
  }
  selector[kQosLevelKey] = level;
  return selector;
}

std::set<std::string> SelectorKeys(const QosConfig& config) {
  std::set<std::string> keys = {kQosLevelKey};
  for (const auto& [level, selector] : config.extra_selectors) {
    for (const auto& [k, v] : selector) keys.insert(k);
  }
  return keys;
}

// Go json-decodes an enhancement into map[string]string: the members that are strings (or
// null, which decodes as "") survive; the last duplicate wins.
void MergeStringMembers(const std::vector<JsonMember>& members, StringMap& out) {
  for (const JsonMember& m : members) {
    if (m.type == JsonType::kString || m.type == JsonType::kNull) out[m.key] = m.string_value;
  }
}

}  // namespace

Result<std::string> ResolveQosLevel(const QosConfig& config, const StringMap& annotations) {
  // Go walks the selector map in random order and stops at the first conflict or match; we
  // check every level for conflicts first so the outcome never depends on the order.
  std::string matched;
  bool shared_mismatched = false;
  for (const std::string& level : QosLevels()) {
    int eq = 0;
    int ne = 0;
    for (const auto& [k, v] : SelectorOf(config, level)) {
      auto it = annotations.find(k);
      if (it == annotations.end()) continue;
      if (it->second == v) {
        ++eq;
      } else {
        ++ne;
      }
    }
    if (eq > 0 && ne > 0) {
      return InvalidArgument("qos " + level + " conflicts, matched count " + std::to_string(eq) +
                             ", mis matched count " + std::to_string(ne));
    }
    if (eq > 0) {
      if (matched.empty()) matched = level;
    } else if (ne > 0 && level == kSharedCores) {
      shared_mismatched = true;
    }
  }
  if (!matched.empty()) return matched;
  if (shared_mismatched) {
    auto it = annotations.find(kQosLevelKey);
    std::string got = it == annotations.end()
                          ? ""
                          : " (" + std::string(kQosLevelKey) + "=" + QuotedValue(it->second) + ")";
    return InvalidArgument("can't get valid qos level" + got);
  }
  return std::string(kSharedCores);
}

StringMap FilterQosMap(const QosConfig& config, const StringMap& m) {
  StringMap out;
  for (const std::string& k : SelectorKeys(config)) {
    if (auto it = m.find(k); it != m.end()) out.insert(*it);
  }
  return out;
}

Result<StringMap> FlattenQosEnhancements(const QosConfig& config, const StringMap& annotations) {
  // Sorted, as upstream iterates its set of valid enhancement keys.
  static const char* const kKeys[] = {kCpuEnhancementKey, kMemoryEnhancementKey,
                                      kNetworkEnhancementKey};
  StringMap out;
  for (const char* key : kKeys) {
    std::string used_key = key;
    auto it = annotations.find(key);
    if (it == annotations.end()) {
      auto alias = config.enhancement_aliases.find(key);
      if (alias == config.enhancement_aliases.end()) continue;
      it = annotations.find(alias->second);
      if (it == annotations.end()) continue;
      used_key = alias->second;
    }
    auto members = ParseJsonObject(it->second);
    if (std::string_view(key) != kNetworkEnhancementKey) {
      if (members.ok()) MergeStringMembers(*members, out);
      continue;
    }
    if (!members.ok()) {
      return InvalidArgument("annotation " + used_key +
                             " is not a JSON object of strings: " + members.status().message());
    }
    for (const JsonMember& m : *members) {
      if (m.type != JsonType::kString && m.type != JsonType::kNull) {
        return InvalidArgument("annotation " + used_key + ": value of key \"" + m.key +
                               "\" is a JSON " + JsonTypeName(m.type) + ", expected a string");
      }
    }
    MergeStringMembers(*members, out);
  }
  for (const auto& [k, v] : config.enhancement_defaults) out.emplace(k, v);
  return out;
}

Result<FilteredRequest> FilterRequest(const QosConfig& config, const StringMap& labels,
                                      const StringMap& annotations) {
  FilteredRequest f;
  NETQOS_ASSIGN_OR_RETURN(f.qos_level, ResolveQosLevel(config, annotations));

  StringMap ann = annotations;
  ann[kQosLevelKey] = f.qos_level;
  NETQOS_ASSIGN_OR_RETURN(StringMap flat, FlattenQosEnhancements(config, ann));
  // Precedence, lowest first: kept keys, selector keys, flattened enhancements.
  for (const std::string& k : config.annotation_kept_keys) {
    if (auto it = ann.find(k); it != ann.end()) f.annotations.insert(*it);
  }
  for (auto& [k, v] : FilterQosMap(config, ann)) f.annotations[k] = v;
  for (auto& [k, v] : flat) f.annotations[k] = v;

  StringMap lab = labels;
  lab[kQosLevelKey] = f.qos_level;
  for (const std::string& k : config.label_kept_keys) {
    if (auto it = lab.find(k); it != lab.end()) f.labels.insert(*it);
  }
  for (auto& [k, v] : FilterQosMap(config, lab)) f.labels[k] = v;

  if (auto it = f.annotations.find(kNamespaceTypeKey); it != f.annotations.end()) {
    const std::string& v = it->second;
    if (v != kHostNs && v != kHostNsPreferred && v != kAntiHostNs && v != kAntiHostNsPreferred) {
      return InvalidArgument(std::string("invalid ") + kNamespaceTypeKey + " " + QuotedValue(v) +
                             " in the network enhancement; valid values: " + kHostNs + ", " +
                             kHostNsPreferred + ", " + kAntiHostNs + ", " + kAntiHostNsPreferred);
    }
  }
  if (auto it = f.annotations.find(kTopologyAffinityRestrictedKey); it != f.annotations.end()) {
    if (it->second != "true" && it->second != "false") {
      return InvalidArgument(std::string("invalid ") + kTopologyAffinityRestrictedKey + " " +
                             QuotedValue(it->second) +
                             " in the network enhancement; valid values: true, false");
    }
  }
  return f;
}

}  // namespace netqos::core
