#include "enforce/tenant_policy.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_depth.h"
#include "common/log_value.h"
#include "core/bandwidth_quantity.h"
#include "core/constants.h"
#include "enforce/burst.h"
#include "enforce/dscp.h"
#include "enforce/leaf_rates.h"

namespace netqos::enforce {
namespace {

using Json = nlohmann::json;

constexpr int kVersion = 1;
constexpr size_t kMaxQuoted = 64;  // characters of a value quoted in a message

constexpr char kHonoured[] = "honoured_annotations";
constexpr char kBorrow[] = "borrow";
constexpr char kDscp[] = "dscp";
constexpr char kMaxBurst[] = "max_burst";
constexpr char kImplicit[] = "implicit_bandwidth_max_mbps";
constexpr char kMaxLevel[] = "unallocated_qos_level_max";
constexpr char kAggregate[] = "aggregate";
constexpr char kEgress[] = "egress";
constexpr char kIngress[] = "ingress";
constexpr char kEgressGuarantee[] = "egress_guarantee";
constexpr char kIngressGuarantee[] = "ingress_guarantee";

// A value from the file, for a message: bounded and escaped.
std::string Quoted(std::string_view v) { return BoundedLogValue(v, kMaxQuoted); }

std::string QuotedJson(const Json& v) {
  return v.is_string() ? Quoted(std::string_view(v.get_ref<const std::string&>()))
                       : Quoted(std::string_view(v.dump()));
}

Status Bad(const std::string& where, const std::string& why) {
  return InvalidArgument(where + ": " + why);
}

const char* TypeName(const Json& v) { return v.type_name(); }

// An integer in [0, max]; JSON numbers that are not integers, negative or larger are refused.
Result<uint64_t> Unsigned(const std::string& where, const Json& v, uint64_t max) {
  if (v.is_number_unsigned()) {
    const uint64_t n = v.get<uint64_t>();
    if (n <= max) return n;
    return Bad(where, "must be at most " + std::to_string(max) + ", got " + v.dump());
  }
  if (v.is_number_integer()) return Bad(where, "must not be negative, got " + v.dump());
  return Bad(where, std::string("must be a whole number, got a ") + TypeName(v));
}

// A bandwidth: a Kubernetes quantity in bit/s ("500M", "1G") or a whole number of bit/s.
Result<uint64_t> Bandwidth(const std::string& where, const Json& v) {
  if (v.is_number()) {
    NETQOS_ASSIGN_OR_RETURN(uint64_t bps, Unsigned(where, v, core::kMaxAnnotatedBitsPerSecond));
    if (bps < core::kMinAnnotatedBitsPerSecond) {
      return Bad(where, "must be at least 1k bit/s, got " + v.dump());
    }
    return bps;
  }
  if (!v.is_string())
    return Bad(where, std::string("must be a quantity string, got a ") + TypeName(v));
  const std::string& s = v.get_ref<const std::string&>();
  auto bps = core::ParseBandwidthQuantity(s);
  if (!bps.ok()) return Bad(where, Quoted(s) + ": " + bps.status().message());
  return *bps;
}

Status RejectUnknown(const std::string& where, const Json& obj,
                     std::initializer_list<const char*> known) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return Bad(where, "unknown key " + Quoted(key) + " (known: " + list + ")");
  }
  return Status::Ok();
}

Result<NamespaceAggregate> ParseAggregate(const std::string& where, const Json& v) {
  if (!v.is_object()) return Bad(where, std::string("must be an object, got a ") + TypeName(v));
  NETQOS_RETURN_IF_ERROR(
      RejectUnknown(where, v, {kEgress, kIngress, kEgressGuarantee, kIngressGuarantee}));
  NamespaceAggregate a;
  struct Field {
    const char* key;
    uint64_t* out;
  };
  for (Field f : {Field{kEgress, &a.egress_ceil_bps}, Field{kIngress, &a.ingress_ceil_bps},
                  Field{kEgressGuarantee, &a.egress_rate_bps},
                  Field{kIngressGuarantee, &a.ingress_rate_bps}}) {
    auto it = v.find(f.key);
    if (it == v.end() || it->is_null()) continue;
    NETQOS_ASSIGN_OR_RETURN(*f.out, Bandwidth(where + "." + f.key, *it));
  }
  struct Pair {
    const char* dir;
    uint64_t ceil, rate;
  };
  for (Pair p : {Pair{kEgress, a.egress_ceil_bps, a.egress_rate_bps},
                 Pair{kIngress, a.ingress_ceil_bps, a.ingress_rate_bps}}) {
    if (p.rate == 0) continue;
    if (p.ceil == 0) {
      return Bad(where, std::string(p.dir) + "_guarantee needs an " + p.dir + " ceiling");
    }
    if (p.rate > p.ceil) {
      return Bad(where, std::string(p.dir) + "_guarantee " + shaping::BitRateText(p.rate) +
                            " is above the " + p.dir + " ceiling " + shaping::BitRateText(p.ceil));
    }
  }
  if (!a.any()) return Bad(where, "needs an egress or an ingress ceiling");
  return a;
}

// Applies the keys present in `v` to `rules` (a namespace starts from the default's rules).
Status ParseRules(const std::string& where, const Json& v, bool is_namespace, TenantRules& rules) {
  if (!v.is_object()) return Bad(where, std::string("must be an object, got a ") + TypeName(v));
  if (is_namespace) {
    NETQOS_RETURN_IF_ERROR(RejectUnknown(
        where, v, {kHonoured, kBorrow, kDscp, kMaxBurst, kImplicit, kMaxLevel, kAggregate}));
  } else {
    if (v.contains(kAggregate)) {
      return Bad(where + "." + kAggregate,
                 "aggregates are per namespace: give each namespace its own under \"namespaces\"");
    }
    NETQOS_RETURN_IF_ERROR(
        RejectUnknown(where, v, {kHonoured, kBorrow, kDscp, kMaxBurst, kImplicit, kMaxLevel}));
  }
  if (auto it = v.find(kHonoured); it != v.end()) {
    const std::string at = where + "." + kHonoured;
    if (!it->is_array()) return Bad(at, std::string("must be an array, got a ") + TypeName(*it));
    if (it->size() > kTenantKeyCount) {
      return Bad(at, "lists " + std::to_string(it->size()) + " entries; there are only " +
                         std::to_string(kTenantKeyCount) + " annotations");
    }
    rules.honoured.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string ei = at + "[" + std::to_string(i) + "]";
      if (!e.is_string()) return Bad(ei, std::string("must be a string, got a ") + TypeName(e));
      auto key = FindTenantKey(e.get_ref<const std::string&>());
      if (!key) {
        std::string list;
        for (auto name : TenantKeyNames()) list += (list.empty() ? "" : ", ") + std::string(name);
        return Bad(ei, QuotedJson(e) + " is not an annotation netqos reads (" + list + ")");
      }
      if (!rules.honoured.insert(*key).second) return Bad(ei, QuotedJson(e) + " is listed twice");
    }
  }
  if (auto it = v.find(kBorrow); it != v.end()) {
    if (!it->is_boolean()) {
      return Bad(where + "." + kBorrow,
                 std::string("must be true or false, got a ") + TypeName(*it));
    }
    rules.borrow = it->get<bool>();
  }
  if (auto it = v.find(kDscp); it != v.end()) {
    const std::string at = where + "." + kDscp;
    if (!it->is_array()) return Bad(at, std::string("must be an array, got a ") + TypeName(*it));
    if (it->size() > 64) return Bad(at, "lists more than the 64 DSCP values there are");
    rules.dscp.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string ei = at + "[" + std::to_string(i) + "]";
      uint8_t dscp = 0;
      if (e.is_number()) {
        NETQOS_ASSIGN_OR_RETURN(uint64_t n, Unsigned(ei, e, 63));
        dscp = static_cast<uint8_t>(n);
      } else if (e.is_string()) {
        auto parsed = ParseDscp(e.get_ref<const std::string&>());
        if (!parsed.ok()) return Bad(ei, QuotedJson(e) + ": " + parsed.status().message());
        dscp = *parsed;
      } else {
        return Bad(ei, std::string("must be a DSCP number or name, got a ") + TypeName(e));
      }
      if (!rules.dscp.insert(dscp).second) return Bad(ei, DscpText(dscp) + " is listed twice");
    }
  }
  if (auto it = v.find(kMaxBurst); it != v.end()) {
    const std::string at = where + "." + kMaxBurst;
    if (it->is_null()) {
      rules.max_burst_bytes.reset();
    } else if (it->is_number()) {
      NETQOS_ASSIGN_OR_RETURN(uint64_t n, Unsigned(at, *it, shaping::kMaxBurstBytes));
      if (n < shaping::kMinBurstBytes) {
        return Bad(at, "must be at least " + std::to_string(shaping::kMinBurstBytes) +
                           " bytes (one packet), got " + it->dump());
      }
      rules.max_burst_bytes = static_cast<uint32_t>(n);
    } else if (it->is_string()) {
      const std::string& s = it->get_ref<const std::string&>();
      auto bytes = core::ParseByteQuantity(s, shaping::kMinBurstBytes, shaping::kMaxBurstBytes);
      if (!bytes.ok()) {
        return Bad(at, Quoted(s) + ": a size in bytes (e.g. 64Ki) from " +
                           std::to_string(shaping::kMinBurstBytes) +
                           " to 1Gi: " + bytes.status().message());
      }
      rules.max_burst_bytes = static_cast<uint32_t>(*bytes);
    } else {
      return Bad(at, std::string("must be a size in bytes or null, got a ") + TypeName(*it));
    }
  }
  if (auto it = v.find(kImplicit); it != v.end()) {
    NETQOS_ASSIGN_OR_RETURN(uint64_t n, Unsigned(where + "." + kImplicit, *it, UINT32_MAX));
    rules.implicit_max_mbps = static_cast<uint32_t>(n);
  }
  if (auto it = v.find(kMaxLevel); it != v.end()) {
    const std::string at = where + "." + kMaxLevel;
    if (it->is_null()) {
      rules.max_unallocated_level.reset();
    } else if (!it->is_string()) {
      return Bad(at, std::string("must be a QoS level name, got a ") + TypeName(*it));
    } else if (auto level =
                   FindChoice(it->get_ref<const std::string&>(), shaping::kQosLevelSpellings)) {
      rules.max_unallocated_level = *level;
    } else {
      return Bad(at, QuotedJson(*it) + " is not a QoS level (" +
                         ChoiceList(shaping::kQosLevelSpellings) + ")");
    }
  }
  if (is_namespace) {
    rules.aggregate = {};
    if (auto it = v.find(kAggregate); it != v.end() && !it->is_null()) {
      NETQOS_ASSIGN_OR_RETURN(rules.aggregate, ParseAggregate(where + "." + kAggregate, *it));
    }
  }
  return Status::Ok();
}

// nlohmann keeps the last of two equal keys; a policy that says a namespace's rules twice is a
// mistake to report, not to resolve silently.
struct DuplicateKeys {
  std::vector<std::set<std::string>> open;
  std::string first;  // the first key seen twice, "" = none
  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second &&
            first.empty()) {
          first = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  }
};

Json RulesJson(const TenantRules& r, bool is_namespace) {
  Json j = Json::object();
  Json honoured = Json::array();
  for (TenantKey k : r.honoured) honoured.push_back(std::string(TenantKeyName(k)));
  j[kHonoured] = honoured;
  j[kBorrow] = r.borrow;
  Json dscp = Json::array();
  for (uint8_t d : r.dscp) dscp.push_back(d);
  j[kDscp] = dscp;
  j[kMaxBurst] = r.max_burst_bytes ? Json(*r.max_burst_bytes) : Json(nullptr);
  j[kImplicit] = r.implicit_max_mbps;
  j[kMaxLevel] =
      r.max_unallocated_level
          ? Json(std::string(ChoiceName(*r.max_unallocated_level, shaping::kQosLevelSpellings)))
          : Json(nullptr);
  if (is_namespace) {
    if (!r.aggregate.any()) {
      j[kAggregate] = nullptr;
    } else {
      Json a = Json::object();
      auto put = [&](const char* key, uint64_t bps) {
        a[key] = bps != 0 ? Json(std::to_string(bps)) : Json(nullptr);
      };
      put(kEgress, r.aggregate.egress_ceil_bps);
      put(kIngress, r.aggregate.ingress_ceil_bps);
      put(kEgressGuarantee, r.aggregate.egress_rate_bps);
      put(kIngressGuarantee, r.aggregate.ingress_rate_bps);
      j[kAggregate] = a;
    }
  }
  return j;
}

}  // namespace

const std::array<std::string_view, kTenantKeyCount>& TenantKeyNames() {
  static const std::array<std::string_view, kTenantKeyCount> kNames = {
      core::kEgressBandwidthAnnotation,
      core::kIngressBandwidthAnnotation,
      kContainerCeilAnnotation,
      kBurstAnnotation,
      kDscpAnnotation,
      core::kQuantityFromQrmDeclarationKey,
      core::kQosLevelKey,
  };
  return kNames;
}

std::string_view TenantKeyName(TenantKey key) {
  return TenantKeyNames().at(static_cast<size_t>(key));
}

std::optional<TenantKey> FindTenantKey(std::string_view annotation) {
  const auto& names = TenantKeyNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == annotation) return static_cast<TenantKey>(i);
  }
  return std::nullopt;
}

const TenantRules& TenantPolicy::For(const std::string& pod_namespace) const {
  auto it = namespaces.find(pod_namespace);
  return it == namespaces.end() ? defaults : it->second;
}

std::string TenantPolicy::EntryName(const std::string& pod_namespace) const {
  return namespaces.count(pod_namespace) != 0 ? "namespace " + pod_namespace : "default";
}

bool IsNamespaceName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if (c != '-' || i == 0 || i + 1 == name.size()) return false;
  }
  return true;
}

Result<TenantPolicy> ParseTenantPolicy(std::string_view text) {
  if (text.size() > kMaxTenantPolicyBytes) {
    return InvalidArgument("tenant policy is " + std::to_string(text.size()) +
                           " bytes, more than the limit of " +
                           std::to_string(kMaxTenantPolicyBytes));
  }
  if (JsonTooDeep(text)) return InvalidArgument("tenant policy: " + JsonTooDeepText());
  DuplicateKeys dup;
  Json doc = Json::parse(
      text.begin(), text.end(),
      [&dup](int depth, Json::parse_event_t event, Json& parsed) {
        return dup(depth, event, parsed);
      },
      /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("tenant policy is not valid JSON");
  if (!dup.first.empty()) {
    return InvalidArgument("tenant policy: key " + Quoted(dup.first) +
                           " appears twice in one object");
  }
  if (!doc.is_object()) {
    return InvalidArgument(std::string("tenant policy must be a JSON object, got a ") +
                           TypeName(doc));
  }
  NETQOS_RETURN_IF_ERROR(RejectUnknown("tenant policy", doc, {"version", "default", "namespaces"}));
  auto version = doc.find("version");
  if (version == doc.end()) return InvalidArgument("tenant policy: \"version\": 1 is required");
  if (!version->is_number_unsigned() || version->get<uint64_t>() != kVersion) {
    return InvalidArgument("tenant policy: version " + QuotedJson(*version) +
                           " is not supported (this netqosd reads version 1)");
  }
  TenantPolicy p;
  if (auto it = doc.find("default"); it != doc.end()) {
    NETQOS_RETURN_IF_ERROR(ParseRules("default", *it, false, p.defaults));
  }
  if (auto it = doc.find("namespaces"); it != doc.end()) {
    if (!it->is_object()) {
      return InvalidArgument(std::string("namespaces: must be an object, got a ") + TypeName(*it));
    }
    if (it->size() > kMaxTenantPolicyNamespaces) {
      return InvalidArgument("namespaces: " + std::to_string(it->size()) +
                             " entries, more than the limit of " +
                             std::to_string(kMaxTenantPolicyNamespaces));
    }
    for (const auto& [name, rules] : it->items()) {
      if (!IsNamespaceName(name)) {
        return InvalidArgument("namespaces: " + Quoted(name) +
                               " is not a namespace name (lowercase letters, digits and '-', at "
                               "most 63)");
      }
      TenantRules r = p.defaults;
      NETQOS_RETURN_IF_ERROR(ParseRules("namespaces." + name, rules, true, r));
      p.namespaces.emplace(name, std::move(r));
    }
  }
  return p;
}

std::string TenantPolicyJson(const TenantPolicy& policy, int indent) {
  Json doc = Json::object();
  doc["version"] = kVersion;
  doc["default"] = RulesJson(policy.defaults, false);
  Json ns = Json::object();
  for (const auto& [name, rules] : policy.namespaces) ns[name] = RulesJson(rules, true);
  doc["namespaces"] = ns;
  return doc.dump(indent, ' ', /*ensure_ascii=*/true);
}

}  // namespace netqos::enforce
