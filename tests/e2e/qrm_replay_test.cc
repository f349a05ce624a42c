// The kubewharf kubelet's QoS resource manager and topology manager, replayed from their source
// (tests/e2e/qrm_manager_replay.h) against the real netqosd: plugin-watcher registration and
// capacity, admission of a mix of pods under each topology policy (init and sidecar containers
// included), a kubelet restart that re-admits the running pods from the kubelet's own
// checkpoint, and a SIGKILL of netqosd with the RemovePod that the kubelet retries after it.
//
// The fixture (tests/e2e/kubelet_harness.h): NUMA 0-1 on socket 0, 2-3 on socket 1; eth0 in the
// host namespace on NUMA 0 (17250 Mbps allocatable, ingress being the tighter direction), eth2
// in netns ns2 on NUMA 2 (21250).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "e2e/qrm_manager_replay.h"

using namespace netqos::e2e;
using namespace netqos::e2e::replay;

namespace {

constexpr char kNumaNodeHints[] = "--network-resource-plugin-numa-node-hints";

// The CPU hint provider's answers, fixed per pod (what the CPU manager or Katalyst's CPU plugin
// would offer):
//  - a pod that needs a whole socket of CPUs: each socket preferred, the machine not;
std::vector<Hint> CpuSocketHints() {
  return {H({0, 1}, true), H({2, 3}, true), H({0, 1, 2, 3}, false)};
}
//  - a pod whose CPUs fit one NUMA node: every non-empty node set, preferred iff one node (the
//    static CPU manager's generateCPUTopologyHints; Katalyst's numa_binding dedicated_cores).
std::vector<Hint> CpuOneNodeHints() {
  std::vector<Hint> out;
  for (Mask m = 1; m < 16; ++m) out.push_back(Hint{m, Count(m) == 1});
  return out;
}

// The mix admitted under every policy, in this order.
std::vector<PodSpec> PodMix() {
  std::vector<PodSpec> pods;
  {
    PodSpec p = MakePod("web", "shared_cores", "host_ns_preferred");
    p.containers = {{"web", 5000}};
    pods.push_back(p);
  }
  {
    PodSpec p = MakePod("db-socket", "dedicated_cores", "host_ns");
    p.containers = {{"db", 5000}};
    p.cpu_hints = CpuSocketHints();
    pods.push_back(p);
  }
  {
    PodSpec p = MakePod("db-node", "dedicated_cores", "host_ns");
    p.containers = {{"db", 4000}};
    p.cpu_hints = CpuOneNodeHints();
    pods.push_back(p);
  }
  {
    PodSpec p = MakePod("batch", "reclaimed_cores", "anti_host_ns_preferred");
    p.containers = {{"batch", 5000}};
    pods.push_back(p);
  }
  {
    // An init container and a sidecar (the second app container: the main one is the first).
    PodSpec p = MakePod("app", "shared_cores", "host_ns_preferred");
    p.init_containers = {{"setup", 1000}};
    p.containers = {{"app", 2000}, {"proxy", 1000}};
    pods.push_back(p);
  }
  {
    // Fits no NIC (eth2, the larger, has 21250).
    PodSpec p = MakePod("huge", "dedicated_cores", "host_ns_preferred");
    p.containers = {{"huge", 22000}};
    pods.push_back(p);
  }
  return pods;
}

struct Expected {
  bool admit;
  std::string reason;        // prefix of AdmitResult::reason when refused
  std::string nic;           // the main container's NIC when admitted
  std::optional<Hint> hint;  // the main container's merged hint (not under none)
};

const Hint kSocket0 = H({0, 1}, true);
const Hint kSocket1 = H({2, 3}, true);
const Hint kNode0 = H({0}, true);
const Hint kNode2 = H({2}, true);
constexpr char kTopo[] = "TopologyAffinityError";
constexpr char kAlloc[] = "UnexpectedAdmissionError";

// What upstream decides for each pod, worked out from the merge in policy.go (see the header):
// with socket-wide NIC hints a provider that prefers one node never meets netqos on a
// preferred hint (the merged hint is preferred only when all affinities are equal), so
// restricted refuses db-node and best-effort admits it with {0,1} not preferred; with
// --network-resource-plugin-numa-node-hints the NIC's own node meets it.
// Under the older policy.go the AND of preferred hints is preferred: a one-node CPU hint and
// the NIC's socket merge to that node, preferred, and netqos serves it from the NIC whose socket
// holds it (docs/compatibility.md, row 36).
Expected Expect(Policy policy, bool node_hints, const std::string& pod,
                MergeRule rule = MergeRule::kEqualAffinities) {
  if (pod == "huge") {
    // Its only hint is the all-NUMA one, not preferred: restricted and single-numa-node refuse
    // it on topology; none and best-effort let it through to Allocate, which fails, and the pod
    // is refused (dedicated_cores is not a QoS level whose plugin errors the kubelet skips).
    bool topo = policy == Policy::kRestricted || policy == Policy::kSingleNumaNode;
    return {false, topo ? kTopo : kAlloc, "", std::nullopt};
  }
  const std::string nic = pod == "batch" ? "eth2" : "eth0";
  switch (policy) {
    case Policy::kNone:
      return {true, "", nic, std::nullopt};
    case Policy::kBestEffort:
    case Policy::kRestricted:
      if (rule == MergeRule::kOlderAnd && (pod == "db-node" || (pod == "db-socket" && node_hints)))
        return {true, "", nic, kNode0};
      if (pod == "db-socket") return {true, "", nic, kSocket0};
      if (pod == "db-node") {
        if (node_hints) return {true, "", nic, kNode0};
        if (policy == Policy::kRestricted) return {false, kTopo, "", std::nullopt};
        return {true, "", nic, H({0, 1}, false)};
      }
      if (pod == "batch") return {true, "", nic, node_hints ? kNode2 : kSocket1};
      return {true, "", nic, node_hints ? kNode0 : kSocket0};  // web, app
    case Policy::kSingleNumaNode:
      // Without one-node NIC hints nothing requesting bandwidth survives the filter;
      // db-socket's CPUs cannot fit one node whatever the NIC offers.
      if (!node_hints || pod == "db-socket") return {false, kTopo, "", std::nullopt};
      if (pod == "batch") return {true, "", nic, kNode2};
      return {true, "", nic, kNode0};
  }
  return {};
}

std::vector<std::string> Flags(bool node_hints) {
  auto flags = FixtureFlags();
  if (node_hints) flags.push_back(kNumaNodeHints);
  return flags;
}

// The NIC netqosd reports for a container, "" when it has none.
std::string NicOf(QrmManager& qrm, const std::string& uid, const std::string& container,
                  double* quantity = nullptr) {
  rp::GetTopologyAwareResourcesResponse tr;
  auto st = qrm.GetTopologyAwareResources(uid, container, &tr);
  INFO(st.error_message());
  REQUIRE(st.ok());
  if (!tr.has_container_topology_aware_resources()) return "";
  const auto& res = tr.container_topology_aware_resources().allocated_resources().at(kResource);
  if (quantity) *quantity = res.aggregated_quantity();
  REQUIRE(res.topology_aware_quantity_list_size() == 1);
  return res.topology_aware_quantity_list(0).name();
}

std::string Describe(const Hint& h) {
  if (!h.affinity) return std::string("{nil ") + (h.preferred ? "true}" : "false}");
  std::string s = "{";
  for (auto n : NodesOf(*h.affinity)) s += std::to_string(n) + ",";
  if (s.size() > 1) s.pop_back();
  return s + (h.preferred ? "} preferred" : "} not preferred");
}

void Register(Harness& h, QrmManager& qrm) {
  auto st = qrm.RegisterViaPluginWatcher(h.socket_path());
  INFO(st.error_message());
  REQUIRE(st.ok());
  REQUIRE(qrm.Registered(kResource));
}

// Admits the mix under `policy`, checks every decision against upstream's, then restarts the
// kubelet and re-admits the running pods.
void ReplayPolicy(Policy policy, bool node_hints, MergeRule rule = MergeRule::kEqualAffinities) {
  INFO("policy " << PolicyName(policy) << (node_hints ? " with " : " without ") << kNumaNodeHints
                 << (rule == MergeRule::kOlderAnd ? ", older merge" : ""));
  Harness h;
  h.Start(Flags(node_hints));

  // Registration through the plugin watcher, then the node status the kubelet reports.
  QrmManager qrm;
  Register(h, qrm);
  CHECK(qrm.Options(kResource).with_topology_alignment());
  CHECK_FALSE(qrm.Options(kResource).pre_start_required());
  auto cap = qrm.GetCapacity();
  CHECK(cap.capacity.at(kResource) == 42500);     // 2 x 25000 x 0.85
  CHECK(cap.allocatable.at(kResource) == 38500);  // minus the 4000 reserved on eth0

  TopologyManager tm(policy, qrm, rule);
  std::map<std::string, AdmitResult> admitted;
  const auto pods = PodMix();
  for (const PodSpec& pod : pods) {
    INFO("pod " << pod.uid);
    const Expected want = Expect(policy, node_hints, pod.uid, rule);
    AdmitResult got = tm.Admit(pod);
    INFO("reason: " << got.reason);
    REQUIRE(got.admit == want.admit);
    if (!want.admit) {
      CHECK_THAT(got.reason, Catch::StartsWith(want.reason));
      // A refused pod holds nothing in netqosd.
      for (const auto& c : pod.containers) CHECK(NicOf(qrm, pod.uid, c.name).empty());
      continue;
    }
    const ContainerSpec& main = pod.containers.front();
    double quantity = 0;
    CHECK(NicOf(qrm, pod.uid, main.name, &quantity) == want.nic);
    CHECK(quantity == main.mbps);
    if (want.hint) {
      INFO("merged " << Describe(got.hints.at(main.name)) << ", want " << Describe(*want.hint));
      CHECK(got.hints.at(main.name) == *want.hint);
      // The Allocate response echoes the hint it was given: the kubelet stores it and re-admits
      // the pod with it after a restart (docs/compatibility.md, row 32).
      const auto& info =
          got.allocations.at(main.name).allocation_result().resource_allocation().at(kResource);
      REQUIRE(info.resource_hints().hints_size() == 1);
      CHECK(MaskOf({info.resource_hints().hints(0).nodes().begin(),
                    info.resource_hints().hints(0).nodes().end()}) == *want.hint->affinity);
      CHECK(info.resource_hints().hints(0).preferred() == want.hint->preferred);
    } else {
      // Policy none: the kubelet sends a hint with no nodes, which netqos takes as no
      // constraint (docs/compatibility.md, row 31).
      CHECK(got.hints.empty());
    }
    if (pod.uid == "app") {
      // The init container and the sidecar: netqos offers no preference, so the merge is the
      // whole machine (nil under single-numa-node); the init container gets no allocation
      // result, the sidecar a zero one, and neither holds bandwidth.
      if (policy != Policy::kNone) {
        const Hint any =
            policy == Policy::kSingleNumaNode ? Hint{std::nullopt, true} : H({0, 1, 2, 3}, true);
        CHECK(got.hints.at("setup") == any);
        CHECK(got.hints.at("proxy") == any);
      }
      CHECK(got.allocations.count("setup") == 0);
      CHECK(qrm.Stored("app", "setup", kResource) == nullptr);
      REQUIRE(qrm.Stored("app", "proxy", kResource) != nullptr);
      CHECK(qrm.Stored("app", "proxy", kResource)->allocated_quantity() == 0);
      CHECK(NicOf(qrm, "app", "setup").empty());
      CHECK(NicOf(qrm, "app", "proxy").empty());
    }
    admitted[pod.uid] = got;
  }

  if (admitted.empty()) {
    // Only single-numa-node without one-node NIC hints admits nothing: no pod left to re-admit.
    REQUIRE(policy == Policy::kSingleNumaNode);
    REQUIRE_FALSE(node_hints);
    return;
  }

  // The kubelet restarts: a new manager from its own checkpoint, the plugin re-registered by
  // the plugin watcher, and every running pod admitted again (the kubelet re-admits the pods it
  // finds running). GetTopologyHints answers from the stored allocations' hints and Allocate
  // short-circuits on them; only the init container (no stored result) and the sidecar (a zero
  // allocation is less than its request) go to the plugin again.
  QrmManager restarted(qrm.Checkpoint());
  for (const auto& [uid, result] : admitted) restarted.SetActive(uid, true);
  Register(h, restarted);
  TopologyManager tm2(policy, restarted, rule);
  int expect_hint_rpcs = 0, expect_alloc_rpcs = 0;
  for (const PodSpec& pod : pods) {
    if (!admitted.count(pod.uid)) continue;
    INFO("re-admitting " << pod.uid);
    AdmitResult again = tm2.Admit(pod);
    INFO("reason: " << again.reason);
    REQUIRE(again.admit);
    for (const auto& [container, hint] : admitted[pod.uid].hints) {
      INFO(container << ": " << Describe(again.hints.at(container)) << " vs " << Describe(hint));
      CHECK(again.hints.at(container) == hint);
    }
    for (const auto& c : pod.containers) {
      double quantity = 0;
      std::string nic = NicOf(restarted, pod.uid, c.name, &quantity);
      if (c.name == "proxy") {
        CHECK(nic.empty());
      } else {
        CHECK(nic == Expect(policy, node_hints, pod.uid, rule).nic);
        CHECK(quantity == c.mbps);
      }
    }
    if (pod.uid == "app") {
      expect_alloc_rpcs += 2;
      if (policy != Policy::kNone) expect_hint_rpcs += 2;
    }
  }
  CHECK(restarted.Rpcs().allocate == expect_alloc_rpcs);
  CHECK(restarted.Rpcs().get_topology_hints == expect_hint_rpcs);
}

}  // namespace

TEST_CASE("e2e: replay of the kubelet's merge rules (policy.go) on hand-worked cases") {
  // Guards the replay model itself, on cases whose answer is read off upstream's code.
  const Mask all = 0b1111;
  // A provider with no preference and a NIC socket hint: the socket, preferred.
  CHECK(Merge(Policy::kRestricted, all, {{}, {{kResource, std::vector<Hint>{kSocket0}}}}).hint ==
        kSocket0);
  // One-node CPU hints against socket-wide NIC hints: never preferred (affinities differ).
  auto m = Merge(Policy::kRestricted, all,
                 {{{"cpu", CpuOneNodeHints()}},
                  {{kResource, std::vector<Hint>{kSocket0, H({0, 1, 2, 3}, false)}}}});
  CHECK_FALSE(m.admit);
  CHECK(m.hint == H({0, 1}, false));
  // A stored hint that is not preferred is refused by restricted on re-admission: why the
  // Allocate response must echo the (preferred) hint it was admitted with.
  CHECK_FALSE(
      Merge(Policy::kRestricted, all, {{}, {{kResource, std::vector<Hint>{H({0, 1}, false)}}}})
          .admit);
  // The older policy.go merges the same two to the CPU's node, preferred.
  auto older = Merge(Policy::kRestricted, all,
                     {{{"cpu", CpuOneNodeHints()}},
                      {{kResource, std::vector<Hint>{kSocket0, H({0, 1, 2, 3}, false)}}}},
                     MergeRule::kOlderAnd);
  CHECK(older.admit);
  CHECK(older.hint == kNode0);
  // An empty list (the plugin unreachable, or no NIC fits) is {nil, not preferred}.
  auto e = Merge(Policy::kBestEffort, all, {{}, {{kResource, std::vector<Hint>{}}}});
  CHECK(e.admit);
  CHECK(e.hint == H({0, 1, 2, 3}, false));
  // single-numa-node: a socket hint is filtered out; the whole machine becomes nil.
  CHECK_FALSE(
      Merge(Policy::kSingleNumaNode, all, {{}, {{kResource, std::vector<Hint>{kSocket0}}}}).admit);
  auto s = Merge(Policy::kSingleNumaNode, all, {{}, {{kResource, std::nullopt}}});
  CHECK(s.admit);
  CHECK(s.hint == Hint{std::nullopt, true});
}

TEST_CASE("e2e: replay of the kubelet under topology policy none") {
  ReplayPolicy(Policy::kNone, false);
  ReplayPolicy(Policy::kNone, true);
}

TEST_CASE("e2e: replay of the kubelet under topology policy best-effort") {
  ReplayPolicy(Policy::kBestEffort, false);
  ReplayPolicy(Policy::kBestEffort, true);
}

TEST_CASE("e2e: replay of the kubelet under topology policy restricted and a kubelet restart") {
  ReplayPolicy(Policy::kRestricted, false);
  ReplayPolicy(Policy::kRestricted, true);
}

TEST_CASE("e2e: replay of the kubelet under topology policy single-numa-node") {
  ReplayPolicy(Policy::kSingleNumaNode, false);
  ReplayPolicy(Policy::kSingleNumaNode, true);
}

TEST_CASE(
    "e2e: replay of the kubelet with kubewharf's older merge (policy.go without the "
    "equal-affinity rule)") {
  for (Policy policy : {Policy::kBestEffort, Policy::kRestricted, Policy::kSingleNumaNode}) {
    ReplayPolicy(policy, false, MergeRule::kOlderAnd);
    ReplayPolicy(policy, true, MergeRule::kOlderAnd);
  }
}

TEST_CASE("e2e: replay of a SIGKILLed netqosd and the kubelet's RemovePod retry") {
  Harness h;
  h.Start();
  QrmManager qrm;
  Register(h, qrm);
  TopologyManager tm(Policy::kBestEffort, qrm);
  for (const PodSpec& pod : PodMix()) {
    if (pod.uid == "huge") continue;
    INFO(pod.uid);
    REQUIRE(tm.Admit(pod).admit);
  }
  // eth0 holds web 5000, db-socket 5000, db-node 4000 and app 2000: 1250 of 17250 are free.
  PodSpec probe = MakePod("probe", "dedicated_cores", "host_ns");
  probe.containers = {{"probe", 6250}};
  CHECK_FALSE(tm.Admit(probe).admit);

  CHECK(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  // GetCapacity while the plugin is down reports 0 capacity and allocatable (the node status the
  // kubelet publishes until netqosd is back).
  auto down = qrm.GetCapacity();
  CHECK(down.capacity.at(kResource) == 0);
  CHECK(down.allocatable.at(kResource) == 0);

  // web is deleted while netqosd is down. UpdateAllocatedResources (the reconcile loop) sends
  // RemovePod, which fails: the kubelet keeps the pod's allocation "temporarily".
  qrm.SetActive("web", false);
  qrm.UpdateAllocatedResources();
  CHECK(qrm.Rpcs().remove_pod == 1);
  CHECK_FALSE(qrm.LastRemoveError().empty());
  CHECK(qrm.Stored("web", "web", kResource) != nullptr);
  // Every later pass retries it, as long as the plugin stays down.
  qrm.UpdateAllocatedResources();
  CHECK(qrm.Rpcs().remove_pod == 2);
  CHECK(qrm.Stored("web", "web", kResource) != nullptr);

  // netqosd comes back (its checkpoint still holds web); the plugin watcher sees the new socket
  // and registers it again, and the next pass's RemovePod succeeds.
  h.Start();
  Register(h, qrm);
  CHECK(qrm.GetCapacity().allocatable.at(kResource) == 38500);
  CHECK(NicOf(qrm, "web", "web") == "eth0");
  qrm.UpdateAllocatedResources();
  CHECK(qrm.Rpcs().remove_pod == 3);
  CHECK(qrm.Stored("web", "web", kResource) == nullptr);
  CHECK(NicOf(qrm, "web", "web").empty());
  // The others kept their NICs across the SIGKILL.
  CHECK(NicOf(qrm, "db-socket", "db") == "eth0");
  CHECK(NicOf(qrm, "batch", "batch") == "eth2");
  // web's 5000 Mbps are free again: 6250 now fits eth0, one more does not.
  PodSpec over = MakePod("probe-over", "dedicated_cores", "host_ns");
  over.containers = {{"probe", 6251}};
  CHECK_FALSE(tm.Admit(over).admit);
  AdmitResult ok = tm.Admit(probe);
  INFO(ok.reason);
  CHECK(ok.admit);
  CHECK(NicOf(qrm, "probe", "probe") == "eth0");
}
