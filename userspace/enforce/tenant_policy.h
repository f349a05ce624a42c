// The tenant policy: what the operator lets the tenants of each namespace ask for with their pods'
// annotations (--tenant-policy-file), and the namespaces' aggregate caps. A pod's annotation may
// only make its own treatment stricter unless this policy allows more. Pure: parsing from text,
// the built-in default (no file) and the canonical form netqosctl prints. The schema, with
// examples: docs/tenant-policy.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

// The pod annotations a tenant writes that netqos reads. kQosLevel is Katalyst's QoS level of a
// pod without an allocation (an allocated pod's level is its allocation's).
enum class TenantKey : int {
  kEgressBandwidth = 0,
  kIngressBandwidth,
  kContainerCeil,
  kBurst,
  kDscp,
  kImplicitBandwidth,
  kQosLevel,
};
inline constexpr size_t kTenantKeyCount = 7;
// The annotation key of each TenantKey, in enum order.
const std::array<std::string_view, kTenantKeyCount>& TenantKeyNames();
std::string_view TenantKeyName(TenantKey key);
std::optional<TenantKey> FindTenantKey(std::string_view annotation);

// An aggregate: all the pods of a namespace together, on each enforced NIC, per direction. A
// ceiling of 0 leaves that direction without one; a guarantee needs its direction's ceiling.
struct NamespaceAggregate {
  uint64_t egress_ceil_bps = 0;
  uint64_t ingress_ceil_bps = 0;
  uint64_t egress_rate_bps = 0;  // guaranteed under contention; 0: none
  uint64_t ingress_rate_bps = 0;
  bool any() const { return egress_ceil_bps != 0 || ingress_ceil_bps != 0; }
  bool operator==(const NamespaceAggregate&) const = default;
};

// What the tenants of one namespace may ask for. The built-in default is the strictest: every
// annotation read, but only where it makes the pod's treatment stricter.
struct TenantRules {
  // Annotations read at all; one not listed is refused, whatever its value.
  std::set<TenantKey> honoured = {TenantKey::kEgressBandwidth,
                                  TenantKey::kIngressBandwidth,
                                  TenantKey::kContainerCeil,
                                  TenantKey::kBurst,
                                  TenantKey::kDscp,
                                  TenantKey::kImplicitBandwidth,
                                  TenantKey::kQosLevel};
  // netqos.io/container-ceil: level (borrow idle bandwidth above the allocation) is honoured.
  bool borrow = false;
  // The DSCP values netqos.io/dscp may choose (any other keeps its level's marking).
  std::set<uint8_t> dscp;
  // The largest netqos.io/burst, bytes; nullopt: the pod's QoS level's burst (--qos-level-burst,
  // else the default bucket of the leaf's rate).
  std::optional<uint32_t> max_burst_bytes;
  // An implicit request (quantity-from-qrm-declaration) may declare up to this many Mbit/s
  // without reserving them; 0: it may not (it is reserved like any request).
  uint32_t implicit_max_mbps = 0;
  // The highest QoS level a pod without an allocation may claim with its qos_level annotation;
  // nullopt: the unclassified level (--unclassified-qos-level).
  std::optional<shaping::QosLevel> max_unallocated_level;
  // Namespaces only: the aggregate of the namespace's pods.
  NamespaceAggregate aggregate;
  bool operator==(const TenantRules&) const = default;
};

struct TenantPolicy {
  TenantRules defaults;
  std::map<std::string, TenantRules> namespaces;  // by namespace name
  // The rules of `pod_namespace`, and which entry they come from ("namespace <name>" or
  // "default").
  const TenantRules& For(const std::string& pod_namespace) const;
  std::string EntryName(const std::string& pod_namespace) const;
  bool operator==(const TenantPolicy&) const = default;
};

// Limits on a policy file: it is the operator's, but read by a privileged daemon from a ConfigMap
// anyone with edit rights on netqos's namespace can change.
inline constexpr size_t kMaxTenantPolicyBytes = 1 << 20;
inline constexpr size_t kMaxTenantPolicyNamespaces = 10000;

// Parses and validates the whole file (JSON, docs/tenant-policy.md): unknown keys, wrong types,
// bad values and limits are errors naming where they are ("namespaces.media.dscp[2]: ..."); the
// values quoted in messages are bounded and escaped. Nothing is partly applied.
Result<TenantPolicy> ParseTenantPolicy(std::string_view text);

// The policy as the file would say it, every field explicit, namespaces sorted: what
// `netqosctl tenant-policy --json` prints. ParseTenantPolicy(TenantPolicyJson(p)) == p.
std::string TenantPolicyJson(const TenantPolicy& policy, int indent = 2);

// A DNS-1123 label (what Kubernetes allows as a namespace name).
bool IsNamespaceName(std::string_view name);

}  // namespace netqos::enforce
