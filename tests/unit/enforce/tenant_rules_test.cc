// The rule over tenants' annotations (enforce/tenant_rules.h): with the built-in policy an
// annotation only ever makes a pod's treatment stricter, and what the policy allows is honoured
// and nothing more. Each escape of the tenant-policy issue as ComputeDesiredState sees it, then
// the same pods under a policy that allows them. Pure.
#include "enforce/tenant_rules.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "core/constants.h"
#include "enforce/desired_state.h"
#include "enforce/edt_rates.h"
#include "unit/enforce/desired_world.h"

namespace {

using Catch::Contains;
using netqos::core::StringMap;
using netqos::enforce::DesiredContainer;
using netqos::enforce::DesiredState;
using netqos::enforce::TenantDecision;
using netqos::enforce::TenantPolicy;
using netqos::enforce::TenantVerdict;
using netqos::shaping::QosLevel;
using netqos::testing::Alloc;
using netqos::testing::kEth0;
using netqos::testing::ObservedIn;
using netqos::testing::World;

constexpr uint64_t kMbit = 1'000'000;
const char kQos[] = "katalyst.kubewharf.io/qos_level";
const char kCeil[] = "netqos.io/container-ceil";
const char kEgress[] = "kubernetes.io/egress-bandwidth";
const char kBurst[] = "netqos.io/burst";
const char kDscp[] = "netqos.io/dscp";
const char kImplicit[] = "qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration";

const DesiredContainer& At(const DesiredState& s, uint64_t cgroup_id) {
  auto it = s.by_cgroup.find(cgroup_id);
  INFO("cgroup " << cgroup_id);
  REQUIRE(it != s.by_cgroup.end());
  return it->second;
}

const netqos::shaping::ContainerAllocation& EgressLeaf(const DesiredState& s, uint64_t key) {
  for (const auto& leaf : s.egress.at(kEth0)) {
    if (leaf.key == key) return leaf;
  }
  FAIL("no egress leaf " << key);
  throw std::logic_error("unreachable");
}

const TenantDecision* DecisionOn(const DesiredContainer& d, const std::string& annotation) {
  for (const auto& x : d.decisions) {
    if (x.annotation == annotation) return &x;
  }
  return nullptr;
}

std::string Problems(const DesiredState& s) {
  std::string out;
  for (const auto& p : s.problems) out += p + "\n";
  return out;
}

// A policy whose namespace "ns" (ObservedIn's) allows `rules`.
std::shared_ptr<const TenantPolicy> Allowing(const netqos::enforce::TenantRules& rules) {
  auto p = std::make_shared<TenantPolicy>();
  p->namespaces["ns"] = rules;
  return p;
}

}  // namespace

TEST_CASE("tenant rules: container-ceil level is refused without borrowing, the allocation holds",
          "[enforce][tenant]") {
  World w;
  w.allocations["u1"]["c"] = Alloc("shared_cores", kEth0, 50, 50);
  w.containers = {ObservedIn("u1", "c", 11, {{kCeil, "level"}, {kEgress, "10G"}})};
  DesiredState s = w.Compute();
  const auto& leaf = EgressLeaf(s, 11);
  INFO(Problems(s));
  CHECK_FALSE(leaf.borrow);
  CHECK(leaf.rate_bps == 50 * kMbit);
  CHECK(leaf.ceil_bps == 50 * kMbit);
  const TenantDecision* d = DecisionOn(At(s, 11), kCeil);
  REQUIRE(d != nullptr);
  CHECK(d->verdict == TenantVerdict::kRefused);
  CHECK_THAT(Problems(s), Contains("refused netqos.io/container-ceil=level") &&
                              Contains("borrowing above the allocation is not allowed"));
  CHECK(s.refused.at({"ns", kCeil}) == 1);

  // Allowed by the policy: the allocation is the guarantee, the annotation the ceiling.
  netqos::enforce::TenantRules borrow;
  borrow.borrow = true;
  w.options.tenant = Allowing(borrow);
  s = w.Compute();
  CHECK(EgressLeaf(s, 11).ceil_bps == 1000 * kMbit);  // 10G held to the link
  CHECK(DecisionOn(At(s, 11), kCeil)->verdict == TenantVerdict::kHonoured);
  CHECK(s.refused.empty());
  CHECK(At(s, 11).tenant_entry() == "namespace ns");
}

TEST_CASE("tenant rules: an implicit allocation gets a leaf capped at its declared bandwidth",
          "[enforce][tenant]") {
  World w;
  auto a = Alloc("shared_cores", kEth0, 0, 0);
  a.annotations[netqos::core::kNetBandwidthImplicitKey] = "50";
  w.allocations["u1"]["c"] = a;
  w.containers = {ObservedIn("u1", "c", 12, {{kImplicit, "true"}})};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  REQUIRE(At(s, 12).leaf_key.has_value());
  const auto& leaf = EgressLeaf(s, 12);
  CHECK(leaf.ceil_bps == 50 * kMbit);
  CHECK(leaf.rate_bps == netqos::enforce::kUnreservedLeafRateBps);  // nothing was reserved
  CHECK(At(s, 12).rates.egress.declared);
  CHECK(At(s, 12).rates.ingress.ceil_bps == 50 * kMbit);
  CHECK(DecisionOn(At(s, 12), kImplicit)->verdict == TenantVerdict::kHonoured);
  // A lower annotation lowers it.
  w.containers = {ObservedIn("u1", "c", 12, {{kImplicit, "true"}, {kEgress, "20M"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 12).ceil_bps == 20 * kMbit);

  // An explicit allocation of a pod that declared (the namespace may not): reported.
  World explicit_world;
  explicit_world.allocations["u2"]["c"] = Alloc("shared_cores", kEth0, 50, 50);
  explicit_world.containers = {ObservedIn("u2", "c", 13, {{kImplicit, "true"}})};
  s = explicit_world.Compute();
  const TenantDecision* d = DecisionOn(At(s, 13), kImplicit);
  REQUIRE(d != nullptr);
  CHECK(d->verdict == TenantVerdict::kRefused);
  CHECK_THAT(d->reason, Contains("no implicit bandwidth") &&
                            Contains("reserved as an explicit request of 50"));
}

TEST_CASE("tenant rules: netqos.io/burst is held to the level's burst or the policy's bound",
          "[enforce][tenant]") {
  World w;
  w.allocations["u1"]["c"] = Alloc("shared_cores", kEth0, 50, 0);
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "1Gi"}})};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  // The level has the default bucket: so does the leaf.
  CHECK(EgressLeaf(s, 14).burst_bytes == 0);
  const TenantDecision* d = DecisionOn(At(s, 14), kBurst);
  REQUIRE(d != nullptr);
  CHECK(d->verdict == TenantVerdict::kBounded);
  CHECK_THAT(d->reason, Contains("1073741824 bytes is above the shared level's burst") &&
                            Contains("7850 bytes"));

  // Below the default bucket: honoured (stricter).
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "1600"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 14).burst_bytes == 1600);
  CHECK(DecisionOn(At(s, 14), kBurst)->verdict == TenantVerdict::kHonoured);

  // A level burst set by the operator bounds it.
  w.options.level_burst[static_cast<size_t>(QosLevel::kShared)] = 65536;
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "1Mi"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 14).burst_bytes == 65536);
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "32Ki"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 14).burst_bytes == 32768);

  // The policy's max_burst replaces the level's bound.
  netqos::enforce::TenantRules big;
  big.max_burst_bytes = 1 << 20;
  w.options.tenant = Allowing(big);
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "1Mi"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 14).burst_bytes == 1u << 20);
  w.containers = {ObservedIn("u1", "c", 14, {{kBurst, "1Gi"}})};
  s = w.Compute();
  CHECK(EgressLeaf(s, 14).burst_bytes == 1u << 20);
  CHECK(DecisionOn(At(s, 14), kBurst)->verdict == TenantVerdict::kBounded);
}

TEST_CASE(
    "tenant rules: an invalid QoS level classifies the pod at the unclassified level, caps kept",
    "[enforce][tenant]") {
  World w;
  w.containers = {ObservedIn("u1", "c", 15, {{kQos, "bogus"}, {kEgress, "20M"}}, 1015)};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  const DesiredContainer& d = At(s, 15);
  CHECK(d.entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
  REQUIRE(d.leaf_key.has_value());
  CHECK(EgressLeaf(s, 1015).ceil_bps == 20 * kMbit);
  CHECK(DecisionOn(d, kQos)->verdict == TenantVerdict::kRefused);
  // Another unclassified level: that one.
  w.options.unclassified_level = QosLevel::kReclaimed;
  s = w.Compute();
  CHECK(At(s, 15).entry.qos_level == static_cast<uint8_t>(QosLevel::kReclaimed));
}

TEST_CASE("tenant rules: netqos.io/dscp applies only where the policy lists the value",
          "[enforce][tenant]") {
  World w;
  w.options.level_dscp[static_cast<size_t>(QosLevel::kShared)] = 8;
  w.containers = {ObservedIn("u1", "c", 16, {{kDscp, "46"}})};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  CHECK(At(s, 16).entry.dscp == std::optional<uint8_t>(8));
  CHECK_THAT(DecisionOn(At(s, 16), kDscp)->reason,
             Contains("46 (EF) is not one the tenant policy (default) lists (it lists none)") &&
                 Contains("the shared level's DSCP 8 (CS1) stands"));

  netqos::enforce::TenantRules ef;
  ef.dscp = {46};
  w.options.tenant = Allowing(ef);
  s = w.Compute();
  CHECK(At(s, 16).entry.dscp == std::optional<uint8_t>(46));
  w.containers = {ObservedIn("u1", "c", 16, {{kDscp, "AF41"}})};
  s = w.Compute();
  CHECK(At(s, 16).entry.dscp == std::optional<uint8_t>(8));
  // A bad value: refused, escaped and bounded in the message.
  w.containers = {ObservedIn("u1", "c", 16, {{kDscp, "46\" pod=x/y\n" + std::string(200, 'z')}})};
  s = w.Compute();
  const TenantDecision* bad = DecisionOn(At(s, 16), kDscp);
  CHECK(bad->verdict == TenantVerdict::kRefused);
  CHECK(bad->value.find('\n') == std::string::npos);
  CHECK(bad->value.size() < 100);
  CHECK_THAT(bad->value, Contains("(212 bytes)"));
}

TEST_CASE("tenant rules: every container no level marks gets --dscp-default's DSCP",
          "[enforce][tenant]") {
  World w;
  w.options.level_dscp[static_cast<size_t>(QosLevel::kShared)] = 8;
  w.options.unmarked_dscp = 0;
  w.containers = {ObservedIn("u1", "c", 17, {{kQos, "reclaimed_cores"}}),
                  ObservedIn("u2", "c", 18, {})};
  DesiredState s = w.Compute();
  CHECK(At(s, 17).entry.dscp == std::optional<uint8_t>(0));
  CHECK(At(s, 18).entry.dscp == std::optional<uint8_t>(8));
}

TEST_CASE("tenant rules: an unallocated pod cannot claim a level above the unclassified one",
          "[enforce][tenant]") {
  World w;
  w.containers = {ObservedIn("u1", "c", 19, {{kQos, "system_cores"}}),
                  ObservedIn("u2", "c", 20, {{kQos, "reclaimed_cores"}})};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  CHECK(At(s, 19).entry.qos_level == static_cast<uint8_t>(QosLevel::kShared));
  CHECK(At(s, 19).entry.priority == netqos::shaping::MakeHandle(0x10, 0x31));
  CHECK(DecisionOn(At(s, 19), kQos)->verdict == TenantVerdict::kBounded);
  CHECK(At(s, 20).entry.qos_level == static_cast<uint8_t>(QosLevel::kReclaimed));  // lower: fine
  CHECK(DecisionOn(At(s, 20), kQos) == nullptr);

  // The policy may let a namespace claim more.
  netqos::enforce::TenantRules system;
  system.max_unallocated_level = QosLevel::kSystem;
  w.options.tenant = Allowing(system);
  s = w.Compute();
  CHECK(At(s, 19).entry.qos_level == static_cast<uint8_t>(QosLevel::kSystem));
  // An allocated pod's level is its allocation's, whatever the policy.
  World allocated;
  allocated.allocations["u3"]["c"] = Alloc("system_cores", kEth0, 10, 10);
  allocated.containers = {ObservedIn("u3", "c", 21, {{kQos, "system_cores"}})};
  s = allocated.Compute();
  CHECK(At(s, 21).entry.qos_level == static_cast<uint8_t>(QosLevel::kSystem));
}

TEST_CASE("tenant rules: annotations the policy does not honour are refused whatever they say",
          "[enforce][tenant]") {
  World w;
  netqos::enforce::TenantRules none;
  none.honoured.clear();
  w.options.tenant = Allowing(none);
  w.allocations["u1"]["c"] = Alloc("shared_cores", kEth0, 50, 0);
  w.containers = {ObservedIn("u1", "c", 22, {{kEgress, "10M"}, {kBurst, "1600"}})};
  DesiredState s = w.Compute();
  INFO(Problems(s));
  CHECK(EgressLeaf(s, 22).ceil_bps == 50 * kMbit);  // the annotation cap is not read
  CHECK(EgressLeaf(s, 22).burst_bytes == 0);
  CHECK(DecisionOn(At(s, 22), kEgress)->verdict == TenantVerdict::kRefused);
  CHECK(DecisionOn(At(s, 22), kBurst)->verdict == TenantVerdict::kRefused);
  CHECK(s.refused.size() == 2);
}

TEST_CASE("tenant rules: the allocation core's grants follow the policy", "[enforce][tenant]") {
  TenantPolicy p;
  p.namespaces["media"].implicit_max_mbps = 500;
  p.namespaces["quiet"].implicit_max_mbps = 500;
  p.namespaces["quiet"].honoured.erase(netqos::enforce::TenantKey::kImplicitBandwidth);
  const auto g = netqos::enforce::ImplicitGrantsOf(p);
  CHECK(g.Allows("media", 500));
  CHECK_FALSE(g.Allows("media", 501));
  CHECK_FALSE(g.Allows("quiet", 10));
  CHECK_FALSE(g.Allows("other", 1));
}

TEST_CASE("tenant rules: values are bounded and escaped", "[enforce][tenant]") {
  CHECK(netqos::enforce::TenantValue("46") == "46");
  CHECK(netqos::enforce::TenantValue("a b") == "\"a b\"");
  const std::string long_value(1000, 'x');
  CHECK(netqos::enforce::TenantValue(long_value) == std::string(64, 'x') + "...(1000 bytes)");
  // Cut at a character boundary: no half of a UTF-8 sequence.
  const std::string utf8 = std::string(63, 'x') + "\xc3\xa9" + "tail";
  CHECK(netqos::enforce::TenantValue(utf8) == std::string(63, 'x') + "...(69 bytes)");
}

TEST_CASE("tenant rules: EDT paces the escapes at the allocation or declaration, as HTB caps them",
          "[enforce][tenant]") {
  World w;
  w.allocations["u1"]["c"] = Alloc("shared_cores", kEth0, 50, 50);
  auto implicit = Alloc("shared_cores", kEth0, 0, 0);
  implicit.annotations[netqos::core::kNetBandwidthImplicitKey] = "50";
  w.allocations["u2"]["c"] = implicit;
  w.containers = {ObservedIn("u1", "c", 31, {{kCeil, "level"}, {kEgress, "10G"}}),
                  ObservedIn("u2", "c", 32, {{kImplicit, "true"}, {kBurst, "1Gi"}})};
  DesiredState s = w.Compute();
  auto rates = netqos::enforce::PlanEdtRates(s.egress, {kEth0});
  const auto handle = [&](uint64_t key) {
    return netqos::shaping::MakeHandle(0x10, *w.minors.Lookup(key));
  };
  CHECK(rates.at(handle(31)) == 50 * kMbit / 8);
  CHECK(rates.at(handle(32)) == 50 * kMbit / 8);

  // Where borrowing is allowed, EDT paces at the annotation: the one way a pod borrows there.
  netqos::enforce::TenantRules borrow;
  borrow.borrow = true;
  w.options.tenant = Allowing(borrow);
  s = w.Compute();
  rates = netqos::enforce::PlanEdtRates(s.egress, {kEth0});
  CHECK(rates.at(handle(31)) == 1000 * kMbit / 8);  // 10G, held to the link
}
