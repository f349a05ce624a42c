// The rule over a pod's annotations: one may only make the pod's own treatment stricter (a lower
// cap, a smaller burst, a lower QoS level) unless the tenant policy (tenant_policy.h) allows more.
// What is refused is reported and ignored. Each function here decides one annotation and says why,
// as a TenantDecision that netqosctl shows and the problem list, the log and a metric report.
// Pure (no I/O); the bandwidth model it feeds: docs/enforcement.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bandwidth_quantity.h"
#include "core/config.h"
#include "core/types.h"
#include "enforce/burst.h"
#include "enforce/dscp.h"
#include "enforce/leaf_rates.h"
#include "enforce/tenant_policy.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

enum class TenantVerdict {
  kHonoured,  // applied as the pod asks
  kBounded,   // applied, held to what the policy allows
  kRefused,   // ignored: the pod keeps what it would have without the annotation
};
std::string_view TenantVerdictName(TenantVerdict verdict);  // "honoured", "bounded", "refused"

struct TenantDecision {
  std::string annotation;  // the key
  std::string value;       // as the pod wrote it, bounded and escaped (TenantValue)
  TenantVerdict verdict = TenantVerdict::kHonoured;
  std::string reason;
  bool operator==(const TenantDecision&) const = default;
};

// A tenant's value for messages, logs and netqosctl: at most 64 characters of it, escaped
// (LogValue: quoted when it is not a plain token), with its length when it was cut.
std::string TenantValue(std::string_view value);

// "refused netqos.io/dscp=46: ...", the form of a decision in the problem list and the log.
std::string DecisionText(const TenantDecision& d);

// The QoS level of a pod without an allocation: the level its annotations select, held to the
// highest one its rules allow (TenantRules::max_unallocated_level, else `unclassified`). Invalid
// or refused level annotations give the unclassified level: the pod is classified (and keeps its
// annotation caps) rather than skipped.
struct LevelChoice {
  shaping::QosLevel level = shaping::QosLevel::kShared;
  std::string katalyst_name;  // "shared_cores": the name the net class ids are keyed by
  std::optional<TenantDecision> decision;
};
LevelChoice UnallocatedLevel(const core::QosConfig& qos, const core::StringMap& annotations,
                             const TenantRules& rules, const std::string& entry,
                             shaping::QosLevel unclassified);

// The Katalyst name of a level ("shared_cores").
std::string KatalystLevelName(shaping::QosLevel level);

// netqos.io/dscp: the annotation's value where the rules list it, else the level's marking.
struct DscpRuling {
  std::optional<uint8_t> dscp;  // what the container is marked with; nullopt: not marked
  std::optional<TenantDecision> decision;
};
DscpRuling RuleDscp(const LevelDscp& levels, shaping::QosLevel level,
                    const core::StringMap& annotations, const TenantRules& rules,
                    const std::string& entry);

// netqos.io/container-ceil: "allocation" is always honoured; "level" (borrowing above the
// allocation) only where the rules allow borrowing or the operator's mode already is `level`.
struct CeilRuling {
  ContainerCeil ceil = ContainerCeil::kAllocation;
  std::optional<TenantDecision> decision;
};
CeilRuling RuleContainerCeil(const core::StringMap& annotations, ContainerCeil operator_mode,
                             const TenantRules& rules, const std::string& entry);

// kubernetes.io/egress-bandwidth and ingress-bandwidth: a cap only ever lowers what a pod gets,
// so they are honoured when the rules read them at all. `annotated` is what
// core::ReadBandwidthAnnotations read; directions the rules do not read are cleared.
std::vector<TenantDecision> RuleBandwidth(const core::StringMap& annotations,
                                          core::AnnotatedBandwidth& annotated,
                                          const TenantRules& rules, const std::string& entry);

// netqos.io/burst, once the leaf's rates are known: held to the rules' max_burst, else to the
// level's burst (--qos-level-burst), else to the default bucket of the leaf's lowest rate. The
// result is the leaf's burst (0: the default bucket).
struct BurstRuling {
  uint32_t burst_bytes = 0;
  std::optional<TenantDecision> decision;
};
BurstRuling RuleBurst(const PodBurst& pod, const core::StringMap& annotations,
                      const LevelBurst& levels, shaping::QosLevel level, const LeafRates& rates,
                      const TenantRules& rules, const std::string& entry);
// Whether the rules read netqos.io/burst at all (a pod whose burst they do not read keeps the
// level's, with a refusal).
std::optional<TenantDecision> BurstNotHonoured(const core::StringMap& annotations,
                                               const TenantRules& rules, const std::string& entry);

// quantity-from-qrm-declaration: an implicit request is reserved as declared (nothing reserved)
// only up to the rules' implicit_max_mbps; the allocation core decides at Allocate
// (core::ImplicitBandwidthGrants). Here, what the pod's allocation says about it: `reserved_mbps`
// the allocation's reservation, `declared_mbps` its recorded declaration (0: none).
std::optional<TenantDecision> ImplicitDecision(const core::StringMap& annotations,
                                               uint32_t reserved_mbps, uint32_t declared_mbps,
                                               const TenantRules& rules, const std::string& entry);

// The allocation core's view of a policy: which namespaces may declare implicit bandwidth, and
// how much.
core::ImplicitBandwidthGrants ImplicitGrantsOf(const TenantPolicy& policy);

}  // namespace netqos::enforce
