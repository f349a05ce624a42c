// Seeded random sequences of hints, allocations, re-allocations, pod-level allocations, removals,
// restores and topology changes over random topologies. After every step the incremental
// machine state must equal one recomputed from the pod entries, and nothing may be
// over-allocated.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "core/constants.h"
#include "core/policy.h"
#include "unit/core/policy_fixture.h"

namespace netqos::core {
namespace {

class RandomChooser final : public NicChooser {
 public:
  explicit RandomChooser(std::mt19937& rng) : rng_(rng) {}
  size_t Choose(size_t count) override {
    return std::uniform_int_distribution<size_t>(0, count - 1)(rng_);
  }

 private:
  std::mt19937& rng_;
};

struct World {
  std::mt19937 rng;
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))];
  }
};

Topology RandomTopology(World& w) {
  Topology t;
  int sockets = w.Int(1, 3);
  int id = 0;
  for (int s = 0; s < sockets; ++s) {
    int per = w.Int(1, 3);
    for (int k = 0; k < per; ++k) t.numa_nodes.push_back({id++, s});
  }
  int nic_count = w.Int(1, 6);
  const std::vector<std::string> names = {"eth0", "eth1", "eth2", "bond0"};
  const std::vector<std::string> netns = {"", "", "ns1", "ns2"};
  const std::vector<int64_t> speeds = {-1, 1000, 10000, 25000, 100000};
  for (int i = 0; i < nic_count; ++i) {
    Nic nic;
    nic.id = {w.Pick(netns), w.Pick(names)};
    bool duplicate =
        std::any_of(t.nics.begin(), t.nics.end(), [&](const Nic& n) { return n.id == nic.id; });
    if (duplicate) continue;
    nic.speed_mbps = w.Pick(speeds);
    nic.numa_node = w.Chance(15) ? -1 : w.Int(0, id - 1);
    nic.enabled = w.Chance(85);
    if (w.Chance(80)) nic.ipv4 = {"10.0." + std::to_string(i) + ".1"};
    if (w.Chance(30)) nic.ipv6 = {"fd00::" + std::to_string(i + 1)};
    if (!nic.id.netns.empty()) nic.netns_path = "/var/run/netns/" + nic.id.netns;
    t.nics.push_back(nic);
  }
  return t;
}

// Flips health of some NICs, removes some and brings back removed ones (same identity and
// speed, so a NIC's capacity never changes under its allocations).
Topology MutateTopology(World& w, const Topology& full, std::vector<bool>& present) {
  Topology t;
  t.numa_nodes = full.numa_nodes;
  for (size_t i = 0; i < full.nics.size(); ++i) {
    if (w.Chance(10)) present[i] = !present[i];
    if (!present[i]) continue;
    Nic nic = full.nics[i];
    if (w.Chance(15)) nic.enabled = !nic.enabled;
    if (w.Chance(10)) {
      nic.healthy = false;
      nic.unhealthy_reason = "carrier lost";
    }
    if (w.Chance(10)) nic.ipv4.clear();
    t.nics.push_back(nic);
  }
  return t;
}

ContainerRequest RandomRequest(World& w, const Topology& topo) {
  static const std::vector<std::string> kEnhancements = {
      "",
      "",
      testing::kHp,
      testing::kNhp,
      testing::kH,
      R"({"namespace_type": "anti_host_ns"})",
      R"({"topology_affinity_restricted": "true"})"};
  static const std::vector<std::string> kQos = {kSharedCores, kReclaimedCores, kDedicatedCores};
  static const std::vector<ContainerType> kTypes = {ContainerType::kMain, ContainerType::kMain,
                                                    ContainerType::kMain, ContainerType::kEphemeral,
                                                    ContainerType::kInit, ContainerType::kSidecar};
  std::optional<TopologyHint> hint;
  if (w.Chance(40)) {
    TopologyHint h;
    int socket = w.Pick(topo.numa_nodes).socket;
    for (const NumaNode& n : topo.numa_nodes) {
      if (n.socket == socket || w.Chance(20)) h.nodes.push_back(static_cast<uint64_t>(n.id));
    }
    hint = h;
  }
  double mbps =
      w.Chance(10) ? 0 : w.Int(1, w.Chance(80) ? 3000 : 12000) + (w.Chance(20) ? 0.5 : 0.0);
  return testing::MakeRequest({w.Pick(kQos), mbps, w.Pick(kEnhancements), "", hint, w.Pick(kTypes),
                               "pod-" + std::to_string(w.Int(0, 24)),
                               "c" + std::to_string(w.Int(0, 2))});
}

void CheckInvariants(const StaticPolicy& policy) {
  // Managed NICs: sorted by (name, netns), exactly the machine-state keys.
  const std::vector<Nic>& nics = policy.nics();
  for (size_t i = 1; i < nics.size(); ++i) {
    REQUIRE(std::make_pair(nics[i - 1].id.name, nics[i - 1].id.netns) <
            std::make_pair(nics[i].id.name, nics[i].id.netns));
  }
  REQUIRE(policy.machine_state().size() == nics.size());

  std::map<NicId, std::pair<uint64_t, uint64_t>> sums;
  for (const auto& [uid, containers] : policy.pod_entries()) {
    REQUIRE_FALSE(containers.empty());
    for (const auto& [name, info] : containers) {
      sums[info.nic()].first += info.egress;
      sums[info.nic()].second += info.ingress;
    }
  }
  for (const Nic& nic : nics) {
    INFO("NIC " << nic.id.Identifier());
    const NicState& st = policy.machine_state().at(nic.id);
    CHECK(st.egress.allocated == sums[nic.id].first);
    CHECK(st.ingress.allocated == sums[nic.id].second);
    CHECK(st.egress.allocated <= st.egress.allocatable);
    CHECK(st.ingress.allocated <= st.ingress.allocatable);
    CHECK(st.egress.free == st.egress.allocatable - st.egress.allocated);
    CHECK(st.ingress.free == st.ingress.allocatable - st.ingress.allocated);
    if (nic.healthy) {
      // Speeds never change under allocations here, so the fix-up never has to fire.
      uint32_t static_egress = st.egress.capacity > st.egress.reservation
                                   ? st.egress.capacity - st.egress.reservation
                                   : 0;
      CHECK(st.egress.allocatable == static_egress);
    }
  }
  // Incremental == recomputed from scratch.
  StaticPolicy recomputed = policy;
  recomputed.Restore(policy.pod_entries());
  REQUIRE(recomputed.machine_state() == policy.machine_state());
}

void RunSequence(uint32_t seed, int steps) {
  World w{std::mt19937(seed)};
  PolicyConfig config = testing::FixtureConfig();
  config.reserved_bandwidth = static_cast<uint32_t>(w.Pick(std::vector<int>{0, 0, 500, 4000}));
  config.egress_capacity_rate = w.Pick(std::vector<float>{0.9f, 0.94f, 1.0f});
  config.ingress_capacity_rate = w.Pick(std::vector<float>{0.85f, 0.9f});
  Topology full = RandomTopology(w);
  auto created = StaticPolicy::Create(config, full);
  if (!created.ok()) {
    // Only a reservation that does not fit may fail here.
    REQUIRE_THAT(created.status().message(), Catch::Contains("invalid bandwidth reservation"));
    config.reserved_bandwidth = 0;
    created = StaticPolicy::Create(config, full);
  }
  REQUIRE(created.ok());
  StaticPolicy policy = std::move(created).value();
  std::vector<bool> present(full.nics.size(), true);
  RandomChooser chooser(w.rng);
  int applied = 0;

  for (int step = 0; step < steps; ++step) {
    INFO("seed " << seed << " step " << step);
    int op = w.Int(0, 99);
    if (op < 15) {
      ContainerRequest req = RandomRequest(w, full);
      auto hints = policy.GetTopologyHints(req);
      REQUIRE(hints.ok());
      if (hints->hints) {
        for (const TopologyHint& h : *hints->hints)
          REQUIRE(std::is_sorted(h.nodes.begin(), h.nodes.end()));
      }
    } else if (op < 60) {
      ContainerRequest req = RandomRequest(w, full);
      const AllocationInfo* before = policy.FindAllocation(req.pod_uid, req.container_name);
      auto plan = policy.PlanAllocate(req, chooser);
      if (!plan.ok()) {
        bool expected = plan.status().code() == StatusCode::kResourceExhausted ||
                        plan.status().code() == StatusCode::kFailedPrecondition;
        INFO(plan.status().message());
        REQUIRE(expected);
        if (before != nullptr) {
          REQUIRE(policy.FindAllocation(req.pod_uid, req.container_name) == before);
        }
        // Without hint or namespace constraints, failure means no healthy NIC has room.
        if (plan.status().code() == StatusCode::kResourceExhausted && !req.hint &&
            req.annotations.count(kNetworkEnhancementKey) == 0) {
          uint32_t mbps = static_cast<uint32_t>(std::ceil(req.resource_requests.begin()->second));
          for (const Nic& nic : policy.nics()) {
            if (!nic.healthy) continue;
            const NicState& st = policy.machine_state().at(nic.id);
            uint64_t own = before != nullptr && before->nic() == nic.id ? before->egress : 0;
            CHECK((st.egress.free + own < mbps || st.ingress.free + own < mbps));
          }
        }
        continue;
      }
      if (plan->change) {
        const AllocationInfo& info = std::get<SetAllocation>(*plan->change).info;
        const Nic* nic = nullptr;
        for (const Nic& n : policy.nics()) {
          if (n.id == info.nic()) nic = &n;
        }
        REQUIRE(nic != nullptr);
        REQUIRE(nic->healthy);
        policy.Apply(*plan->change);
        ++applied;
        CheckInvariants(policy);
      }
    } else if (op < 68) {
      PodRequest req = testing::MakePodRequest(
          testing::RequestSpec(kSharedCores, w.Int(0, 8000), "", "", std::nullopt,
                               ContainerType::kMain, "pod-" + std::to_string(w.Int(0, 24))));
      auto plan = policy.PlanAllocateForPod(req, chooser);
      if (plan.ok() && plan->change) {
        policy.Apply(*plan->change);
        ++applied;
        CheckInvariants(policy);
      }
    } else if (op < 85) {
      auto plan = policy.PlanRemovePod("pod-" + std::to_string(w.Int(0, 24)));
      REQUIRE(plan.ok());
      if (plan->change) {
        policy.Apply(*plan->change);
        ++applied;
        CheckInvariants(policy);
      }
    } else if (op < 92) {
      Topology next = MutateTopology(w, full, present);
      MachineState before = policy.machine_state();
      Status st = policy.UpdateTopology(next);
      if (!st.ok()) {
        REQUIRE(policy.machine_state() == before);
      } else {
        CheckInvariants(policy);
      }
    } else {
      PodEntries entries = policy.pod_entries();
      MachineState before = policy.machine_state();
      policy.Restore(entries);
      REQUIRE(policy.machine_state() == before);
    }
  }
  // Enough of the sequence must actually change state to mean something (about 10%).
  CHECK(applied > steps / 12);
}

TEST_CASE("random operation sequences keep the machine state consistent", "[policy][property]") {
  for (uint32_t seed : {1u, 2u, 3u, 42u, 1234u, 20260101u, 777u, 9001u, 31337u, 5u}) {
    RunSequence(seed, 3000);
  }
}

}  // namespace
}  // namespace netqos::core
