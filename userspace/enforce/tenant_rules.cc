#include "enforce/tenant_rules.h"

#include <algorithm>

#include "common/log_value.h"
#include "core/constants.h"
#include "core/qos.h"

namespace netqos::enforce {
namespace {

constexpr size_t kMaxShown = 64;

const std::string* Find(const core::StringMap& annotations, TenantKey key) {
  auto it = annotations.find(std::string(TenantKeyName(key)));
  return it == annotations.end() ? nullptr : &it->second;
}

TenantDecision Decide(TenantKey key, const std::string& value, TenantVerdict verdict,
                      std::string reason) {
  return {std::string(TenantKeyName(key)), TenantValue(value), verdict, std::move(reason)};
}

// The refusal of an annotation the rules do not read at all; nullopt when they do.
std::optional<TenantDecision> NotRead(TenantKey key, const std::string& value,
                                      const TenantRules& rules, const std::string& entry) {
  if (rules.honoured.count(key) != 0) return std::nullopt;
  return Decide(key, value, TenantVerdict::kRefused,
                "the tenant policy (" + entry + ") does not honour this annotation");
}

// Lower enum values are higher priorities (system first).
bool Above(shaping::QosLevel a, shaping::QosLevel b) {
  return static_cast<int>(a) < static_cast<int>(b);
}

}  // namespace

std::string_view TenantVerdictName(TenantVerdict verdict) {
  switch (verdict) {
    case TenantVerdict::kHonoured:
      return "honoured";
    case TenantVerdict::kBounded:
      return "bounded";
    case TenantVerdict::kRefused:
      return "refused";
  }
  return "?";
}

std::string TenantValue(std::string_view value) { return BoundedLogValue(value, kMaxShown); }

std::string DecisionText(const TenantDecision& d) {
  return std::string(TenantVerdictName(d.verdict)) + " " + d.annotation + "=" + d.value + ": " +
         d.reason;
}

std::string KatalystLevelName(shaping::QosLevel level) {
  return std::string(ChoiceName(level, shaping::kQosLevelSpellings));
}

LevelChoice UnallocatedLevel(const core::QosConfig& qos, const core::StringMap& annotations,
                             const TenantRules& rules, const std::string& entry,
                             shaping::QosLevel unclassified) {
  LevelChoice out;
  out.level = unclassified;
  out.katalyst_name = KatalystLevelName(unclassified);
  const std::string* written = Find(annotations, TenantKey::kQosLevel);
  const std::string value = written != nullptr ? *written : "";
  if (written != nullptr) {
    if (auto refused = NotRead(TenantKey::kQosLevel, value, rules, entry)) {
      refused->reason += "; classified at the unclassified level " + out.katalyst_name;
      out.decision = std::move(refused);
      return out;
    }
  }
  auto resolved = core::ResolveQosLevel(qos, annotations);
  std::optional<shaping::QosLevel> level;
  if (resolved.ok()) {
    if (auto l = FindChoice(*resolved, shaping::kQosLevelSpellings)) level = *l;
  }
  if (!level) {
    // The message of ResolveQosLevel quotes the value raw: only its verdict is kept here.
    out.decision = Decide(
        TenantKey::kQosLevel, value, TenantVerdict::kRefused,
        "not a valid QoS level (" +
            std::string(resolved.ok() ? "unknown level" : "conflicting or unknown selectors") +
            "); classified at the unclassified level " + out.katalyst_name +
            ", its annotation caps kept");
    return out;
  }
  const shaping::QosLevel highest = rules.max_unallocated_level.value_or(unclassified);
  if (Above(*level, highest)) {
    out.level = highest;
    out.katalyst_name = KatalystLevelName(highest);
    out.decision = Decide(
        TenantKey::kQosLevel, value.empty() ? *resolved : value, TenantVerdict::kBounded,
        "a pod without an allocation may claim at most " + out.katalyst_name +
            " (tenant policy: " + entry +
            (rules.max_unallocated_level ? ")" : ", the unclassified level") + "); held there");
    return out;
  }
  out.level = *level;
  out.katalyst_name = KatalystLevelName(*level);
  return out;
}

DscpRuling RuleDscp(const LevelDscp& levels, shaping::QosLevel level,
                    const core::StringMap& annotations, const TenantRules& rules,
                    const std::string& entry) {
  DscpRuling out;
  out.dscp = levels[static_cast<size_t>(level)];
  const std::string* written = Find(annotations, TenantKey::kDscp);
  if (written == nullptr) return out;
  const std::string kept = out.dscp ? "the " + std::string(shaping::QosLevelName(level)) +
                                          " level's DSCP " + DscpText(*out.dscp) + " stands"
                                    : "not marked";
  if (auto refused = NotRead(TenantKey::kDscp, *written, rules, entry)) {
    refused->reason += "; " + kept;
    out.decision = std::move(refused);
    return out;
  }
  auto dscp = ParseDscp(*written);
  if (!dscp.ok()) {
    out.decision = Decide(TenantKey::kDscp, *written, TenantVerdict::kRefused,
                          dscp.status().message() + "; " + kept);
    return out;
  }
  if (rules.dscp.count(*dscp) == 0) {
    std::string listed;
    for (uint8_t d : rules.dscp) listed += (listed.empty() ? "" : ", ") + DscpText(d);
    out.decision =
        Decide(TenantKey::kDscp, *written, TenantVerdict::kRefused,
               "DSCP " + DscpText(*dscp) + " is not one the tenant policy (" + entry + ") lists" +
                   (listed.empty() ? " (it lists none)" : " (" + listed + ")") + "; " + kept);
    return out;
  }
  out.dscp = *dscp;
  out.decision =
      Decide(TenantKey::kDscp, *written, TenantVerdict::kHonoured,
             "DSCP " + DscpText(*dscp) + " is listed by the tenant policy (" + entry + ")");
  return out;
}

CeilRuling RuleContainerCeil(const core::StringMap& annotations, ContainerCeil operator_mode,
                             const TenantRules& rules, const std::string& entry) {
  CeilRuling out;
  out.ceil = operator_mode;
  const std::string* written = Find(annotations, TenantKey::kContainerCeil);
  if (written == nullptr) return out;
  const std::string kept = "the operator's --container-ceil=" +
                           std::string(ChoiceName(operator_mode, kContainerCeilNames)) + " applies";
  if (auto refused = NotRead(TenantKey::kContainerCeil, *written, rules, entry)) {
    refused->reason += "; " + kept;
    out.decision = std::move(refused);
    return out;
  }
  auto mode = FindChoice(*written, kContainerCeilNames);
  if (!mode) {
    out.decision = Decide(TenantKey::kContainerCeil, *written, TenantVerdict::kRefused,
                          "not " + ChoiceList(kContainerCeilNames) + "; " + kept);
    return out;
  }
  if (*mode == ContainerCeil::kLevel && operator_mode != ContainerCeil::kLevel && !rules.borrow) {
    out.decision = Decide(TenantKey::kContainerCeil, *written, TenantVerdict::kRefused,
                          "borrowing above the allocation is not allowed by the tenant policy (" +
                              entry + "); " + kept);
    return out;
  }
  out.ceil = *mode;
  out.decision = Decide(TenantKey::kContainerCeil, *written, TenantVerdict::kHonoured,
                        *mode == ContainerCeil::kLevel && operator_mode != ContainerCeil::kLevel
                            ? "borrowing is allowed by the tenant policy (" + entry + ")"
                            : "no more than the operator gives");
  return out;
}

std::vector<TenantDecision> RuleBandwidth(const core::StringMap& annotations,
                                          core::AnnotatedBandwidth& annotated,
                                          const TenantRules& rules, const std::string& entry) {
  std::vector<TenantDecision> out;
  struct Dir {
    TenantKey key;
    std::optional<uint64_t>* bps;
    bool* refused;
  };
  for (Dir d :
       {Dir{TenantKey::kEgressBandwidth, &annotated.egress_bps, &annotated.egress_refused},
        Dir{TenantKey::kIngressBandwidth, &annotated.ingress_bps, &annotated.ingress_refused}}) {
    const std::string* written = Find(annotations, d.key);
    if (written == nullptr) continue;
    if (auto refused = NotRead(d.key, *written, rules, entry)) {
      d.bps->reset();
      *d.refused = false;  // nothing to keep from before either: the policy reads none
      out.push_back(std::move(*refused));
    }
  }
  if (rules.honoured.count(TenantKey::kEgressBandwidth) == 0 ||
      rules.honoured.count(TenantKey::kIngressBandwidth) == 0) {
    // Parse errors of an annotation the policy does not read are not the pod's problem.
    std::vector<std::string> kept;
    for (auto& e : annotated.errors) {
      const bool egress = e.find(core::kEgressBandwidthAnnotation) != std::string::npos;
      const TenantKey k = egress ? TenantKey::kEgressBandwidth : TenantKey::kIngressBandwidth;
      if (rules.honoured.count(k) != 0) kept.push_back(std::move(e));
    }
    annotated.errors = std::move(kept);
  }
  return out;
}

std::optional<TenantDecision> BurstNotHonoured(const core::StringMap& annotations,
                                               const TenantRules& rules, const std::string& entry) {
  const std::string* written = Find(annotations, TenantKey::kBurst);
  if (written == nullptr) return std::nullopt;
  auto refused = NotRead(TenantKey::kBurst, *written, rules, entry);
  if (refused) refused->reason += "; the level's burst applies";
  return refused;
}

BurstRuling RuleBurst(const PodBurst& pod, const core::StringMap& annotations,
                      const LevelBurst& levels, shaping::QosLevel level, const LeafRates& rates,
                      const TenantRules& rules, const std::string& entry) {
  BurstRuling out;
  const uint32_t level_burst = levels[static_cast<size_t>(level)];
  out.burst_bytes = level_burst;
  if (!pod.bytes) return out;  // absent, unreadable or not honoured: the level's
  const std::string* written = Find(annotations, TenantKey::kBurst);
  const std::string value = written != nullptr ? *written : std::to_string(*pod.bytes);
  // The bound: the policy's, else the level's burst, else the default bucket of the leaf's
  // lowest rate (the smallest of the buckets the level would give it).
  uint32_t bound = 0;
  std::string bound_text;
  if (rules.max_burst_bytes) {
    bound = *rules.max_burst_bytes;
    bound_text = "the tenant policy's max_burst (" + entry + "), " + BurstText(bound);
  } else if (level_burst != 0) {
    bound = level_burst;
    bound_text =
        "the " + std::string(shaping::QosLevelName(level)) + " level's burst, " + BurstText(bound);
  } else {
    uint64_t lowest = UINT64_MAX;
    for (const DirectionRates* r : {&rates.egress, &rates.ingress}) {
      if (r->capped()) lowest = std::min(lowest, r->rate_bps);
    }
    bound = shaping::DefaultBucketBytes(lowest == UINT64_MAX ? 0 : lowest);
    bound_text = "the " + std::string(shaping::QosLevelName(level)) +
                 " level's burst, the default bucket (1 ms of the leaf's rate + 1600 bytes, " +
                 std::to_string(bound) + " bytes)";
  }
  const uint32_t asked =
      *pod.bytes == 0 ? shaping::DefaultBucketBytes(rates.egress.capped() ? rates.egress.rate_bps
                                                                          : rates.ingress.rate_bps)
                      : *pod.bytes;
  if (asked <= bound) {
    out.burst_bytes = *pod.bytes;
    out.decision =
        Decide(TenantKey::kBurst, value, TenantVerdict::kHonoured, "within " + bound_text);
    return out;
  }
  // Held to the bound: the policy's or the level's own value; for the default bucket, 0 (each
  // bucket then gets its own default, at most what the pod asked for below it).
  out.burst_bytes = rules.max_burst_bytes ? *rules.max_burst_bytes : level_burst;
  out.decision = Decide(TenantKey::kBurst, value, TenantVerdict::kBounded,
                        BurstText(asked) + " is above " + bound_text + "; held to it");
  return out;
}

std::optional<TenantDecision> ImplicitDecision(const core::StringMap& annotations,
                                               uint32_t reserved_mbps, uint32_t declared_mbps,
                                               const TenantRules& rules, const std::string& entry) {
  const std::string* written = Find(annotations, TenantKey::kImplicitBandwidth);
  if (written == nullptr || *written != "true") return std::nullopt;
  if (declared_mbps != 0 && reserved_mbps == 0) {
    return Decide(TenantKey::kImplicitBandwidth, *written, TenantVerdict::kHonoured,
                  "declared " + std::to_string(declared_mbps) +
                      " Mbit/s without reserving them; held to them by a leaf");
  }
  std::string why;
  if (rules.honoured.count(TenantKey::kImplicitBandwidth) == 0) {
    why = "the tenant policy (" + entry + ") does not honour this annotation";
  } else if (rules.implicit_max_mbps == 0) {
    why = "the tenant policy (" + entry + ") lets this namespace declare no implicit bandwidth";
  } else {
    why = "the tenant policy (" + entry + ") lets this namespace declare up to " +
          std::to_string(rules.implicit_max_mbps) + " Mbit/s";
  }
  return Decide(
      TenantKey::kImplicitBandwidth, *written, TenantVerdict::kRefused,
      why + "; reserved as an explicit request of " + std::to_string(reserved_mbps) + " Mbit/s");
}

core::ImplicitBandwidthGrants ImplicitGrantsOf(const TenantPolicy& policy) {
  core::ImplicitBandwidthGrants g;
  auto max_of = [](const TenantRules& r) {
    return r.honoured.count(TenantKey::kImplicitBandwidth) != 0 ? r.implicit_max_mbps : 0u;
  };
  g.default_max_mbps = max_of(policy.defaults);
  for (const auto& [name, rules] : policy.namespaces) {
    g.max_mbps_by_namespace[name] = max_of(rules);
  }
  return g;
}

}  // namespace netqos::enforce
