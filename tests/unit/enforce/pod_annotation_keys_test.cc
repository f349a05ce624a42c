// PodAnnotationKeys: what the pod list parser keeps of a pod's annotations is all the enforcer
// reads; a pass over pods with only those gives what it gives with every annotation.
#include "enforce/pod_annotation_keys.h"

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/constants.h"
#include "enforce/tenant_policy.h"
#include "enforce/tenant_rules.h"
#include "unit/enforce/desired_world.h"

namespace {

using netqos::core::AllocationInfo;
using netqos::core::PolicyConfig;
using netqos::core::StringMap;
using netqos::enforce::PodAnnotationKeys;
using netqos::testing::Alloc;
using netqos::testing::kEth0;
using netqos::testing::ObservedIn;
using netqos::testing::World;

// A policy that reads annotations beyond the defaults: an extra selector per level and its own
// net class key.
PolicyConfig ConfiguredPolicy() {
  PolicyConfig p;
  p.qos.extra_selectors["dedicated_cores"] = {{"example.com/tier", "gold"}};
  p.qos.extra_selectors["reclaimed_cores"] = {{"example.com/tier", "scrap"},
                                              {"example.com/batch", "yes"}};
  p.pod_net_class_annotation_key = "example.com/net-class";
  return p;
}

// What a pass decided, as text: the same for two passes that read the same.
std::string Summary(const netqos::enforce::DesiredState& s) {
  std::string out;
  for (const auto& [cgroup, d] : s.by_cgroup) {
    out += std::to_string(cgroup) + ": priority=" + std::to_string(d.entry.priority) +
           " class=" + std::to_string(d.entry.net_class_id) +
           " level=" + std::to_string(d.entry.qos_level) +
           " flags=" + std::to_string(d.entry.flags) +
           " dscp=" + (d.entry.dscp ? std::to_string(*d.entry.dscp) : "-") +
           " leaf=" + (d.leaf_key ? "yes" : "no") + " burst=" + std::to_string(d.burst_bytes) +
           " egress=" + std::to_string(d.rates.egress.ceil_bps) + "/" +
           std::to_string(d.rates.egress.rate_bps) +
           " ingress=" + std::to_string(d.rates.ingress.ceil_bps) + "/" +
           std::to_string(d.rates.ingress.rate_bps) + (d.rates.egress.borrow ? " borrow" : "");
    for (const auto& decision : d.decisions)
      out += " [" + netqos::enforce::DecisionText(decision) + "]";
    out += "\n";
  }
  for (const auto& problem : s.problems) out += "problem: " + problem + "\n";
  for (const auto& [key, n] : s.refused) {
    out += "refused " + key.first + " " + key.second + ": " + std::to_string(n) + "\n";
  }
  return out;
}

// Pods that ask for everything the enforcer reads, among annotations it does not.
std::vector<std::pair<std::string, StringMap>> AnnotatedPods() {
  const StringMap noise = {{"kubectl.kubernetes.io/last-applied-configuration", "{\"a\":1}"},
                           {"kubernetes.io/config.seen", "2026-12-07T10:11:12Z"},
                           {"example.com/other", "x"}};
  std::vector<std::pair<std::string, StringMap>> pods = {
      {"level", {{netqos::core::kQosLevelKey, "dedicated_cores"}}},
      {"selector", {{"example.com/tier", "gold"}}},
      {"conflict", {{"example.com/tier", "scrap"}, {"example.com/batch", "no"}}},
      {"class", {{"example.com/net-class", "7"}, {netqos::core::kQosLevelKey, "system_cores"}}},
      {"caps",
       {{"kubernetes.io/egress-bandwidth", "100M"},
        {"kubernetes.io/ingress-bandwidth", "20M"},
        {"netqos.io/burst", "64Ki"},
        {"netqos.io/container-ceil", "level"}}},
      {"dscp", {{"netqos.io/dscp", "AF41"}, {"kubernetes.io/egress-bandwidth", "1G"}}},
      {"bad", {{"kubernetes.io/egress-bandwidth", "lots"}, {"netqos.io/dscp", "99"}}},
      {"implicit", {{netqos::core::kQuantityFromQrmDeclarationKey, "true"}}},
      {"plain", {}}};
  for (auto& [uid, annotations] : pods) annotations.insert(noise.begin(), noise.end());
  return pods;
}

// A pass over AnnotatedPods, each pod's annotations passed through `keep` first. Half the pods
// have an allocation.
std::string Pass(const std::function<StringMap(const StringMap&)>& keep) {
  World w;
  w.policy = ConfiguredPolicy();
  w.options.tenant = netqos::testing::AnyLevelPolicy();
  uint64_t cgroup = 100;
  bool allocated = false;
  for (const auto& [uid, annotations] : AnnotatedPods()) {
    w.containers.push_back(ObservedIn(uid, "app", ++cgroup, keep(annotations)));
    allocated = !allocated;
    if (allocated) w.allocations[uid]["app"] = Alloc("shared_cores", kEth0, 50, 50);
  }
  return Summary(w.Compute());
}

}  // namespace

TEST_CASE("PodAnnotationKeys: the tenant keys, the QoS level selectors and the net class key") {
  const auto keys = PodAnnotationKeys(ConfiguredPolicy());
  std::set<std::string, std::less<>> expected = {"example.com/tier", "example.com/batch",
                                                 "example.com/net-class"};
  for (std::string_view name : netqos::enforce::TenantKeyNames()) expected.emplace(name);
  CHECK(keys == expected);
  CHECK(keys.contains(netqos::core::kQosLevelKey));
  CHECK(PodAnnotationKeys(PolicyConfig{}).contains(netqos::core::kDefaultNetClassAnnotationKey));
}

TEST_CASE("PodAnnotationKeys: a pass over pods with only those annotations decides the same") {
  const auto keys = PodAnnotationKeys(ConfiguredPolicy());
  const std::string all = Pass([](const StringMap& a) { return a; });
  const std::string kept = Pass([&](const StringMap& a) {
    StringMap out;
    for (const auto& [k, v] : a) {
      if (keys.contains(k)) out.emplace(k, v);
    }
    return out;
  });
  CHECK(kept == all);
  // The pods do make the pass read them: without their annotations it decides otherwise.
  const std::string none = Pass([](const StringMap&) { return StringMap{}; });
  CHECK(none != all);
}
