// AttributeLeafQueues: the HTB leaves' counters (what the kernel reports per class handle on a
// NIC and its IFB) joined with the containers of a pass, through the leaf handles of the plans the
// enforcer applies. A capped container gets its own leaves' drops, a pod's shared leaf is counted
// once per class, a container in its level's default leaf gets nothing attributed, and a link
// that cannot be read says so instead of reporting zeros. Pure.
#include "enforce/leaf_queues.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/constants.h"
#include "enforce/desired_state.h"
#include "enforce/link_shaper.h"
#include "shaping/htb_plan.h"
#include "support/observed_container.h"

namespace {

using netqos::Result;
using netqos::core::AllocationInfo;
using netqos::core::Nic;
using netqos::core::NicId;
using netqos::enforce::AttributeLeafQueues;
using netqos::enforce::ComputeDesiredState;
using netqos::enforce::DesiredState;
using netqos::enforce::EnforcedLink;
using netqos::enforce::LeafHandles;
using netqos::enforce::LevelClasses;
using netqos::enforce::LinkClassStats;
using netqos::enforce::LinkLeaves;
using netqos::enforce::ObservedContainer;
using netqos::enforce::QueueSnapshot;
using netqos::shaping::HtbClassStats;
using netqos::shaping::MakeHandle;

const char kClassKey[] = "katalyst.kubewharf.io/net_class_id";

AllocationInfo Alloc(const NicId& nic, uint32_t egress, uint32_t ingress) {
  AllocationInfo a;
  a.qos_level = "shared_cores";
  a.if_name = nic.name;
  a.ns_name = nic.netns;
  a.egress = egress;
  a.ingress = ingress;
  return a;
}

ObservedContainer Container(const std::string& uid, const std::string& name, uint64_t cgroup_id,
                            const std::string& class_id, uint64_t pod_cgroup_id = 0) {
  ObservedContainer c;
  netqos::core::StringMap annotations;
  if (!class_id.empty()) annotations[kClassKey] = class_id;
  c.pod = netqos::testing::PodMetaOf(uid, "ns", uid);
  c.annotations = std::make_shared<const netqos::core::StringMap>(std::move(annotations));
  c.container_name = name;
  c.cgroup_id = cgroup_id;
  c.pod_cgroup_id = pod_cgroup_id;
  return c;
}

HtbClassStats Stats(uint32_t handle, uint64_t drops, uint64_t overlimits = 0,
                    uint64_t backlog = 0) {
  HtbClassStats s;
  s.handle = handle;
  s.bytes = 1000 * drops + 1;
  s.packets = drops + 1;
  s.drops = drops;
  s.overlimits = overlimits;
  s.backlog_bytes = backlog;
  s.backlog_packets = backlog > 0 ? 1 : 0;
  return s;
}

// Two shaped NICs, as the enforcer sees them after a pass: eth0 on the host (ifindex 2), eth1 in
// namespace ns1 (ifindex 7).
//   web   (cgroup 100, class 7): its own leaf on eth0, 100 Mbit/s out, 50 in
//   batch (cgroups 200, 201 of pod cgroup 290, class 9): one pod-level leaf on eth1, egress only
//   idle  (cgroup 300, class 7): no allocation, its level's default leaf 10:31
struct TwoLinks {
  NicId eth0{"", "eth0"};
  NicId eth1{"ns1", "eth1"};
  DesiredState desired;
  std::vector<LinkLeaves> links;

  TwoLinks() {
    netqos::core::PolicyConfig policy;
    netqos::core::PodEntries allocations;
    allocations["web"]["app"] = Alloc(eth0, 100, 50);
    allocations["batch"][netqos::core::kPodLevelContainerName] = Alloc(eth1, 200, 0);
    const std::vector<ObservedContainer> containers = {
        Container("web", "app", 100, "7"), Container("batch", "a", 200, "9", 290),
        Container("batch", "b", 201, "9", 290), Container("idle", "app", 300, "7")};
    const std::vector<EnforcedLink> enforced = {{eth0, 1000}, {eth1, 1000}};
    netqos::shaping::MinorAllocator minors;
    desired = ComputeDesiredState(policy, allocations, containers, enforced, {}, {true}, minors);
    REQUIRE(desired.problems.empty());
    for (const auto& [id, ifindex, netns] :
         {std::tuple{eth0, 2, std::string()}, std::tuple{eth1, 7, std::string("/run/netns/ns1")}}) {
      auto egress = netqos::shaping::BuildHtbPlan(id.Identifier(), {}, 1000, desired.egress[id]);
      auto ingress = netqos::shaping::BuildHtbPlan(netqos::enforce::IfbNameFor(ifindex), {}, 1000,
                                                   desired.ingress[id]);
      REQUIRE(egress.ok());
      REQUIRE(ingress.ok());
      Nic nic;
      nic.id = id;
      nic.ifindex = ifindex;
      nic.netns_path = netns;
      links.push_back({nic, netqos::enforce::IfbNameFor(ifindex), LeafHandles(*egress),
                       LeafHandles(*ingress), LevelClasses(*egress), LevelClasses(*ingress)});
    }
  }

  uint32_t Leaf(uint64_t cgroup_id) const {
    return desired.by_cgroup.at(cgroup_id).entry.priority;  // skb->priority is the leaf handle
  }
};

}  // namespace

TEST_CASE("leaf handles of a plan are its container leaves", "[enforce]") {
  TwoLinks w;
  REQUIRE(w.links.size() == 2);
  CHECK(w.links[0].egress == std::map<uint64_t, uint32_t>{{100, w.Leaf(100)}});
  CHECK(w.links[0].ingress == std::map<uint64_t, uint32_t>{{100, w.Leaf(100)}});
  // The pod-level leaf is keyed by the pod's cgroup; no ingress allocation, no ingress leaf.
  CHECK(w.links[1].egress == std::map<uint64_t, uint32_t>{{290, w.Leaf(200)}});
  CHECK(w.links[1].ingress.empty());
  CHECK(w.Leaf(200) == w.Leaf(201));
  CHECK(w.Leaf(300) == MakeHandle(0x10, 0x31));
}

TEST_CASE("a capped container gets its own leaves' drops, by direction", "[enforce]") {
  TwoLinks w;
  LinkClassStats eth0;
  // The default leaf 10:31 drops too (someone's unclassified traffic): nobody's in particular.
  eth0.egress = {{w.Leaf(100), Stats(w.Leaf(100), 5, 40, 1514)},
                 {MakeHandle(0x10, 0x31), Stats(MakeHandle(0x10, 0x31), 99)}};
  eth0.ingress = {{w.Leaf(100), Stats(w.Leaf(100), 3, 8)}};
  LinkClassStats eth1;
  eth1.egress = {{w.Leaf(200), Stats(w.Leaf(200), 11, 2)}};
  std::vector<Result<LinkClassStats>> readings = {eth0, eth1};

  const QueueSnapshot q = AttributeLeafQueues(w.links, readings, w.desired.by_cgroup);
  CHECK(q.errors.empty());

  REQUIRE(q.containers.count(100) == 1);
  const auto& web = q.containers.at(100);
  REQUIRE(web.egress.has_value());
  CHECK(web.egress->device == "eth0");
  CHECK(web.egress->handle == w.Leaf(100));
  CHECK(web.egress->counters.drops == 5);
  CHECK(web.egress->counters.overlimits == 40);
  CHECK(web.egress->counters.backlog_bytes == 1514);
  CHECK(web.egress->error.empty());
  REQUIRE(web.ingress.has_value());
  CHECK(web.ingress->device == "nqifb2");
  CHECK(web.ingress->counters.drops == 3);

  // Both containers of the pod report the pod's one leaf; it has no ingress leaf.
  for (uint64_t id : {200, 201}) {
    INFO("cgroup " << id);
    REQUIRE(q.containers.count(id) == 1);
    REQUIRE(q.containers.at(id).egress.has_value());
    CHECK(q.containers.at(id).egress->device == "eth1");
    CHECK(q.containers.at(id).egress->counters.drops == 11);
    CHECK_FALSE(q.containers.at(id).ingress.has_value());
  }
  // No leaf of its own: nothing attributed, not even its default leaf's 99 drops.
  CHECK(q.containers.count(300) == 0);

  // Classes: sums over distinct leaves; the shared pod leaf counts once.
  REQUIRE(q.classes.count(7) == 1);
  CHECK(q.classes.at(7).egress.drops == 5);
  CHECK(q.classes.at(7).egress.overlimits == 40);
  CHECK(q.classes.at(7).ingress.drops == 3);
  REQUIRE(q.classes.count(9) == 1);
  CHECK(q.classes.at(9).egress.drops == 11);
  CHECK(q.classes.at(9).egress.packets == 12);
  CHECK(q.classes.at(9).ingress.drops == 0);
}

TEST_CASE("an unreadable link or a missing leaf is an error, not zero drops", "[enforce]") {
  TwoLinks w;
  LinkClassStats eth0;
  eth0.egress = {{MakeHandle(0x10, 0x31), Stats(MakeHandle(0x10, 0x31), 1)}};  // web's leaf gone
  eth0.ingress = {{w.Leaf(100), Stats(w.Leaf(100), 4)}};
  std::vector<Result<LinkClassStats>> readings = {
      eth0, netqos::NotFound("setns(/run/netns/ns1): No such file or directory")};

  const QueueSnapshot q = AttributeLeafQueues(w.links, readings, w.desired.by_cgroup);
  REQUIRE(q.errors.size() == 1);
  CHECK_THAT(q.errors[0], Catch::Contains("ns1-eth1"));
  CHECK_THAT(q.errors[0], Catch::Contains("setns"));

  const auto& web = q.containers.at(100);
  REQUIRE(web.egress.has_value());
  CHECK_THAT(web.egress->error, Catch::Contains("not found on eth0"));
  CHECK(web.egress->counters.drops == 0);
  CHECK(web.ingress->counters.drops == 4);
  CHECK(web.ingress->error.empty());
  const auto& batch = q.containers.at(200);
  REQUIRE(batch.egress.has_value());
  CHECK_THAT(batch.egress->error, Catch::Contains("setns"));
  // Only what was read is summed.
  CHECK(q.classes.at(7).egress.drops == 0);
  CHECK(q.classes.at(7).ingress.drops == 4);
  CHECK(q.classes.at(9).egress.drops == 0);
}

TEST_CASE("no shaped links: containers have no queues, classes are listed at zero", "[enforce]") {
  TwoLinks w;
  const QueueSnapshot q = AttributeLeafQueues({}, {}, w.desired.by_cgroup);
  CHECK(q.containers.empty());
  CHECK(q.errors.empty());
  CHECK(q.classes.size() == 2);
  CHECK(q.classes.at(7).egress.drops == 0);
}

TEST_CASE("every level class of every link is reported with its rates and, read, its counters",
          "[enforce]") {
  TwoLinks w;
  // A link of 1000 Mbit/s: the default config's shared level gets 40 % and may borrow the rest.
  REQUIRE(w.links[0].egress_levels.size() == 4);
  const auto& shared = w.links[0].egress_levels[2];
  CHECK(shared.level == netqos::shaping::QosLevel::kShared);
  CHECK(shared.handle == MakeHandle(0x10, 0x30));
  CHECK(shared.rate_bps == 400'000'000);
  CHECK(shared.ceil_bps == 1'000'000'000);
  CHECK(LevelClasses(netqos::shaping::HtbPlan{}).empty());  // no tree (EDT egress): no levels

  LinkClassStats eth0;
  eth0.egress = {{MakeHandle(0x10, 0x30), Stats(MakeHandle(0x10, 0x30), 0, 17)}};
  std::vector<Result<LinkClassStats>> readings = {eth0, netqos::NotFound("setns: gone")};
  const QueueSnapshot q = AttributeLeafQueues(w.links, readings, w.desired.by_cgroup);
  // 3 trees x 4 levels: eth1's ingress caps nothing (the batch pod has 0 Mbit/s in), so that
  // direction keeps no tree of netqos's and has no level classes to report.
  CHECK(w.links[1].ingress_levels.empty());
  REQUIRE(q.levels.size() == 12);
  int read = 0;
  for (const auto& l : q.levels) {
    if (!l.counters) continue;
    ++read;
    CHECK(l.nic == "eth0");
    CHECK(l.egress);
    CHECK(l.level.level == netqos::shaping::QosLevel::kShared);
    CHECK(l.counters->overlimits == 17);
    CHECK(l.counters->bytes == 1);
  }
  CHECK(read == 1);  // the other classes were not in the reading, or their link was not read
}
