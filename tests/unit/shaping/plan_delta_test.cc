// DiffPlans: which plan changes can be sent as a delta (new and changed classes) and which need
// the whole plan applied (a class gone or moved, another qdisc). Pure; no kernel.
#include "shaping/plan_delta.h"

#include <catch2/catch.hpp>
#include <vector>

#include "support/htb_planner.h"

using namespace netqos::shaping;
using netqos::testing::HtbPlanner;

namespace {

constexpr uint32_t H(uint32_t minor) { return MakeHandle(kQdiscMajor, minor); }

HtbPlan MustPlan(HtbPlanner& p, const std::vector<ContainerAllocation>& cs) {
  auto plan = p.Plan(10000, cs);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  return *plan;
}

ContainerAllocation Leaf(uint64_t key, uint64_t mbps) {
  ContainerAllocation c;
  c.key = key;
  c.level = QosLevel::kShared;
  c.rate_bps = MbitToBits(mbps);
  return c;
}

}  // namespace

TEST_CASE("plan delta: the same plan needs nothing", "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan plan = MustPlan(p, {Leaf(1, 100)});
  auto d = DiffPlans(plan, plan);
  REQUIRE(d);
  CHECK(d->empty());
}

TEST_CASE("plan delta: a new container is its leaf plus the level leaf it takes from",
          "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan before = MustPlan(p, {Leaf(1, 100)});
  const HtbPlan after = MustPlan(p, {Leaf(1, 100), Leaf(2, 200)});
  auto d = DiffPlans(before, after);
  REQUIRE(d);
  REQUIRE(d->added.size() == 1);
  CHECK(d->added[0].container_key == 2u);
  CHECK(d->added[0].rate_bps == MbitToBits(200));
  CHECK(d->added[0].parent == H(0x30));
  // The shared level's default leaf is guaranteed what its containers leave: 200 less now.
  REQUIRE(d->changed.size() == 1);
  CHECK(d->changed[0].handle == H(0x31));
  CHECK(d->changed[0].rate_bps == before.Find(H(0x31))->rate_bps - MbitToBits(200));
}

TEST_CASE("plan delta: a changed rate is a change in place", "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan before = MustPlan(p, {Leaf(1, 100)});
  const HtbPlan after = MustPlan(p, {Leaf(1, 150)});
  auto d = DiffPlans(before, after);
  REQUIRE(d);
  CHECK(d->added.empty());
  bool leaf_changed = false;
  for (const auto& c : d->changed) leaf_changed |= c.container_key == 1u;
  CHECK(leaf_changed);
}

TEST_CASE("plan delta: a class that goes needs the whole plan", "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan before = MustPlan(p, {Leaf(1, 100), Leaf(2, 100)});
  const HtbPlan after = MustPlan(p, {Leaf(1, 100)});
  CHECK_FALSE(DiffPlans(before, after));
}

TEST_CASE("plan delta: a class under another parent needs the whole plan", "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan before = MustPlan(p, {Leaf(1, 100)});
  HtbPlan after = before;
  for (auto& c : after.classes) {
    if (c.container_key) c.parent = H(0x20);
  }
  CHECK_FALSE(DiffPlans(before, after));
}

TEST_CASE("plan delta: another default class or link rate needs the whole plan", "[shaping]") {
  HtbPlanner p("eth0");
  const HtbPlan before = MustPlan(p, {Leaf(1, 100)});
  HtbPlan other_default = before;
  other_default.default_minor = LevelDefaultMinor(QosLevel::kReclaimed);
  CHECK_FALSE(DiffPlans(before, other_default));
  HtbPlan other_link = before;
  other_link.link_mbps = before.link_mbps * 2;
  CHECK_FALSE(DiffPlans(before, other_link));
}

TEST_CASE("plan delta: a tree that comes or goes needs the whole plan, an idle one needs nothing",
          "[shaping]") {
  auto idle = BuildHtbPlan("eth0", ShapingConfig{}, 10000, {});
  auto capped = BuildHtbPlan("eth0", ShapingConfig{}, 10000,
                             {{1, QosLevel::kShared, MbitToBits(100), 0, false, 0x100}});
  REQUIRE(idle.ok());
  REQUIRE(capped.ok());
  REQUIRE_FALSE(idle->shapes);
  CHECK_FALSE(DiffPlans(*idle, *capped));  // the first cap installs the tree
  CHECK_FALSE(DiffPlans(*capped, *idle));  // the last one removes it
  // Two idle plans: nothing is installed, so nothing to patch, whatever their classes say.
  ShapingConfig other;
  other.levels[static_cast<size_t>(QosLevel::kShared)].prio = 5;
  auto idle2 = BuildHtbPlan("eth0", other, 10000, {});
  REQUIRE(idle2.ok());
  REQUIRE_FALSE(idle2->classes == idle->classes);
  auto d = DiffPlans(*idle, *idle2);
  REQUIRE(d);
  CHECK(d->empty());
}
