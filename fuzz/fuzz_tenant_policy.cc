// libFuzzer target: the tenant policy file (--tenant-policy-file, ParseTenantPolicy), which a
// privileged daemon reads from a ConfigMap, and the decisions it feeds (the implicit-bandwidth
// grants of the allocation core).
//
// Invariants:
// - no crash, no hang; a bad file is an InvalidArgument whose message is bounded and carries no
//   control character (values from the file are quoted and escaped);
// - an accepted policy's canonical form parses back to the same policy, and is itself canonical;
// - every namespace of an accepted policy is a namespace name, its DSCPs are 0..63, its bursts
//   within one packet .. 1 GiB, an aggregate's guarantees within its ceilings;
// - the grants agree with the rules: a namespace may declare exactly up to its maximum.
#include <cstddef>
#include <cstdint>
#include <string>

#include "enforce/tenant_policy.h"
#include "enforce/tenant_rules.h"
#include "fuzz_check.h"

namespace {

using namespace netqos;

void CheckRules(const std::string& ns, const enforce::TenantRules& r,
                const core::ImplicitBandwidthGrants& grants) {
  for (uint8_t d : r.dscp) FUZZ_CHECK(d <= 63, "DSCPs are 0..63");
  if (r.max_burst_bytes) {
    FUZZ_CHECK(*r.max_burst_bytes >= shaping::kMinBurstBytes &&
                   *r.max_burst_bytes <= shaping::kMaxBurstBytes,
               "a burst bound is one packet .. 1 GiB");
  }
  const auto& a = r.aggregate;
  FUZZ_CHECK(a.egress_rate_bps <= a.egress_ceil_bps || a.egress_ceil_bps == 0,
             "an egress guarantee is within its ceiling");
  FUZZ_CHECK(a.egress_rate_bps == 0 || a.egress_ceil_bps != 0, "a guarantee needs its ceiling");
  FUZZ_CHECK(a.ingress_rate_bps == 0 || a.ingress_ceil_bps != 0, "a guarantee needs its ceiling");
  FUZZ_CHECK(a.ingress_rate_bps <= a.ingress_ceil_bps || a.ingress_ceil_bps == 0,
             "an ingress guarantee is within its ceiling");
  const bool reads = r.honoured.count(enforce::TenantKey::kImplicitBandwidth) != 0;
  const uint32_t max = reads ? r.implicit_max_mbps : 0;
  FUZZ_CHECK(!grants.Allows(ns, max + 1u) || max == UINT32_MAX, "no grant above the maximum");
  FUZZ_CHECK(max == 0 || grants.Allows(ns, max), "the maximum itself is granted");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto policy = enforce::ParseTenantPolicy(text);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() == StatusCode::kInvalidArgument,
               "a bad file is InvalidArgument");
    const std::string m = policy.status().message();  // status() is a copy
    FUZZ_CHECK(m.size() < 1024, "an error message is bounded");
    for (char ch : m) {
      const auto c = static_cast<unsigned char>(ch);
      FUZZ_CHECK(c >= 0x20 && c != 0x7f, "no control character in it");
    }
    return 0;
  }
  const std::string canonical = enforce::TenantPolicyJson(*policy);
  auto again = enforce::ParseTenantPolicy(canonical);
  FUZZ_CHECK(again.ok(), "the canonical form parses");
  FUZZ_CHECK(*again == *policy, "parse -> canonical -> parse is identity");
  FUZZ_CHECK(enforce::TenantPolicyJson(*again) == canonical, "the canonical form is canonical");
  const core::ImplicitBandwidthGrants grants = enforce::ImplicitGrantsOf(*policy);
  CheckRules("(default)", policy->defaults, grants);  // no namespace has this name
  FUZZ_CHECK(!policy->defaults.aggregate.any(), "the default has no aggregate");
  for (const auto& [name, rules] : policy->namespaces) {
    FUZZ_CHECK(enforce::IsNamespaceName(name), "namespaces are namespace names");
    CheckRules(name, rules, grants);
  }
  return 0;
}
