// HTB planning: class shapes, stable leaf minors across replans, exhaustion, parent-rate raising,
// over-commit reports and validation errors. Pure; no kernel.
#include "shaping/htb_plan.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/htb_planner.h"

using netqos::StatusCode;
using netqos::TcHandleText;
using namespace netqos::shaping;
using netqos::testing::HtbPlanner;

namespace {

constexpr uint32_t H(uint32_t minor) { return MakeHandle(kQdiscMajor, minor); }
constexpr uint64_t kMbit = kBitsPerMbit;
constexpr uint64_t Mbit(uint64_t mbps) { return MbitToBits(mbps); }

HtbPlan MustPlan(HtbPlanner& p, uint64_t link, const std::vector<ContainerAllocation>& cs) {
  auto plan = p.Plan(link, cs);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  return *plan;
}

std::vector<uint32_t> Handles(const HtbPlan& plan) {
  std::vector<uint32_t> out;
  for (const auto& c : plan.classes) out.push_back(c.handle);
  return out;
}

}  // namespace

TEST_CASE("no containers: top class, four levels and their default leaves", "[shaping]") {
  HtbPlanner p("eth0");
  HtbPlan plan = MustPlan(p, 10000, {});
  CHECK(plan.qdisc_handle == 0x100000u);
  CHECK(plan.default_minor == 0x31u);
  CHECK(Handles(plan) == std::vector<uint32_t>{H(1), H(0x10), H(0x11), H(0x20), H(0x21), H(0x30),
                                               H(0x31), H(0x40), H(0x41)});
  const PlannedClass* top = plan.Find(H(1));
  REQUIRE(top);
  CHECK(top->parent == H(0));
  CHECK(top->rate_bps / kMbit == 10000);
  CHECK(top->ceil_bps / kMbit == 10000);
  const uint64_t rates[] = {500, 4000, 4000, 1500};
  for (uint32_t i = 0; i < 4; ++i) {
    const PlannedClass* lvl = plan.Find(H(0x10 * (i + 1)));
    REQUIRE(lvl);
    CHECK(lvl->parent == H(1));
    CHECK(lvl->rate_bps / kMbit == rates[i]);
    CHECK(lvl->ceil_bps / kMbit == 10000);
    CHECK(lvl->prio == 0);  // HTB ignores prio on inner classes
    const PlannedClass* dflt = plan.Find(H(0x10 * (i + 1) + 1));
    REQUIRE(dflt);
    CHECK(dflt->parent == lvl->handle);
    CHECK(dflt->rate_bps / kMbit ==
          rates[i]);  // no containers: the default leaf takes the guarantee
    CHECK(dflt->ceil_bps / kMbit == 10000);
    CHECK(dflt->prio == i);
    CHECK_FALSE(dflt->container_key.has_value());
  }
  CHECK(plan.overcommit.empty());
  CHECK(p.PriorityFor(42) == H(0x31));
}

TEST_CASE("one and many containers get capped leaves under their level", "[shaping]") {
  HtbPlanner p("eth0");
  HtbPlan one = MustPlan(p, 1000, {{7, QosLevel::kDedicated, Mbit(100)}});
  const PlannedClass* leaf = one.Find(H(0x100));
  REQUIRE(leaf);
  CHECK(leaf->parent == H(0x20));
  CHECK(leaf->rate_bps / kMbit == 100);
  CHECK(leaf->ceil_bps / kMbit == 100);
  CHECK(leaf->prio == 1);
  CHECK(leaf->container_key == std::optional<uint64_t>(7));
  CHECK(one.Find(H(0x21))->rate_bps / kMbit == 300);  // 400 - 100
  CHECK(one.Find(H(0x20))->rate_bps / kMbit == 400);
  CHECK(p.PriorityFor(7) == 0x100100u);

  HtbPlan many = MustPlan(p, 1000,
                          {{7, QosLevel::kDedicated, Mbit(100)},
                           {8, QosLevel::kShared, Mbit(50)},
                           {9, QosLevel::kReclaimed, Mbit(20)},
                           {10, QosLevel::kSystem, Mbit(10)},
                           {11, QosLevel::kShared, Mbit(60)}});
  CHECK(many.classes.size() == 9 + 5);
  CHECK(p.PriorityFor(7) == H(0x100));  // kept
  for (uint64_t key : {8, 9, 10, 11}) {
    auto m = p.MinorFor(key);
    REQUIRE(m);
    const PlannedClass* c = many.Find(H(*m));
    REQUIRE(c);
    CHECK(c->container_key == std::optional<uint64_t>(key));
    CHECK(p.PriorityFor(key) == H(*m));
  }
  CHECK(many.Find(p.PriorityFor(8))->parent == H(0x30));
  CHECK(many.Find(p.PriorityFor(9))->parent == H(0x40));
  CHECK(many.Find(p.PriorityFor(10))->parent == H(0x10));
  CHECK(many.Find(H(0x31))->rate_bps / kMbit == 400 - 110);
  // Parents are listed before their children.
  for (size_t i = 0; i < many.classes.size(); ++i) {
    if (many.classes[i].parent == H(0)) continue;
    bool parent_before = false;
    for (size_t j = 0; j < i; ++j)
      parent_before |= many.classes[j].handle == many.classes[i].parent;
    CHECK(parent_before);
  }
}

TEST_CASE("minors are stable across replans and freed minors are reused", "[shaping]") {
  HtbPlanner p("eth0");
  (void)MustPlan(p, 1000,
                 {{1, QosLevel::kShared, Mbit(10)},
                  {2, QosLevel::kShared, Mbit(10)},
                  {3, QosLevel::kDedicated, Mbit(10)}});
  const uint32_t m1 = *p.MinorFor(1), m2 = *p.MinorFor(2), m3 = *p.MinorFor(3);
  CHECK(m1 == 0x100);
  CHECK(m2 == 0x101);
  CHECK(m3 == 0x102);
  // Remove 2, add 4: 4 reuses 2's minor; 1 and 3 keep theirs.
  HtbPlan plan = MustPlan(p, 1000,
                          {{3, QosLevel::kDedicated, Mbit(10)},
                           {1, QosLevel::kShared, Mbit(20)},
                           {4, QosLevel::kReclaimed, Mbit(5)}});
  CHECK(*p.MinorFor(1) == m1);
  CHECK(*p.MinorFor(3) == m3);
  CHECK_FALSE(p.MinorFor(2).has_value());
  CHECK(*p.MinorFor(4) == m2);
  CHECK(p.PriorityFor(2) == H(0x31));  // gone: default leaf
  CHECK(plan.Find(H(m1))->rate_bps / kMbit == 20);
  // A container that changes level keeps its minor (the installer re-creates the leaf).
  (void)MustPlan(p, 1000, {{1, QosLevel::kReclaimed, Mbit(20)}});
  CHECK(*p.MinorFor(1) == m1);
  // Replanning the same input gives the identical plan.
  auto again1 = MustPlan(p, 1000, {{1, QosLevel::kReclaimed, Mbit(20)}});
  auto again2 = MustPlan(p, 1000, {{1, QosLevel::kReclaimed, Mbit(20)}});
  CHECK(again1.classes == again2.classes);
}

TEST_CASE("minor allocator: exhaustion, release and restore", "[shaping]") {
  MinorAllocator a(0x100, 0x102);
  CHECK(a.capacity() == 3);
  CHECK(*a.Acquire(10) == 0x100);
  CHECK(*a.Acquire(11) == 0x101);
  CHECK(*a.Acquire(12) == 0x102);
  CHECK(*a.Acquire(11) == 0x101);  // idempotent
  auto full = a.Acquire(13);
  REQUIRE_FALSE(full.ok());
  CHECK(full.status().code() == StatusCode::kResourceExhausted);
  a.Release(11);
  CHECK(*a.Acquire(13) == 0x101);

  MinorAllocator r;
  REQUIRE(r.Restore(5, 0x105).ok());
  CHECK(r.Restore(5, 0x105).ok());
  CHECK(r.Restore(6, 0x105).code() == StatusCode::kAlreadyExists);
  CHECK(r.Restore(5, 0x106).code() == StatusCode::kAlreadyExists);
  CHECK(r.Restore(7, 0x10).code() == StatusCode::kInvalidArgument);
  CHECK(*r.Acquire(8) == 0x100);  // skipped minors are still handed out
  CHECK(*r.Acquire(9) == 0x101);
}

TEST_CASE("planner reports minor exhaustion and leaves the previous state intact", "[shaping]") {
  HtbPlanner p("eth9");
  p.minors() = MinorAllocator(0x100, 0x101);
  (void)MustPlan(p, 1000, {{1, QosLevel::kShared, Mbit(1)}, {2, QosLevel::kShared, Mbit(1)}});
  auto plan = p.Plan(1000, {{1, QosLevel::kShared, Mbit(1)},
                            {2, QosLevel::kShared, Mbit(1)},
                            {3, QosLevel::kShared, Mbit(1)}});
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(plan.status().message(), Catch::Contains("eth9") && Catch::Contains("container 3"));
  CHECK(*p.MinorFor(1) == 0x100);
  CHECK(*p.MinorFor(2) == 0x101);
  CHECK_FALSE(p.MinorFor(3).has_value());
  // Replacing a container at full capacity works: the departed one frees its minor first.
  (void)MustPlan(p, 1000, {{1, QosLevel::kShared, Mbit(1)}, {3, QosLevel::kShared, Mbit(1)}});
  CHECK(*p.MinorFor(3) == 0x101);
}

TEST_CASE("parent rates are raised to the sum of their children", "[shaping]") {
  HtbPlanner p("eth0");
  // system guarantees 5% of 1000 = 50; containers ask 30 + 40 = 70.
  HtbPlan plan =
      MustPlan(p, 1000, {{1, QosLevel::kSystem, Mbit(30)}, {2, QosLevel::kSystem, Mbit(40)}});
  const PlannedClass* sys = plan.Find(H(0x10));
  REQUIRE(sys);
  CHECK(sys->rate_bps / kMbit == 70 + 1);  // + the default leaf's minimum
  CHECK(plan.Find(H(0x11))->rate_bps / kMbit == 1);
  CHECK(sys->ceil_bps / kMbit == 1000);
  // The raised levels now guarantee more than the link: reported, not fatal.
  REQUIRE(plan.overcommit.size() == 1);
  CHECK_THAT(plan.overcommit[0], Catch::Contains("eth0") && Catch::Contains("1.021 Gbit/s"));
}

TEST_CASE("over-commit of one level is capped at the link rate and reported", "[shaping]") {
  HtbPlanner p("eth1");
  HtbPlan plan =
      MustPlan(p, 100, {{1, QosLevel::kShared, Mbit(60)}, {2, QosLevel::kShared, Mbit(50)}});
  const PlannedClass* shared = plan.Find(H(0x30));
  REQUIRE(shared);
  CHECK(shared->rate_bps / kMbit == 100);
  CHECK(shared->ceil_bps / kMbit == 100);
  REQUIRE(plan.overcommit.size() >= 1);
  CHECK_THAT(plan.overcommit[0],
             Catch::Contains("eth1") && Catch::Contains("shared") && Catch::Contains("111"));
  // Leaves keep their caps.
  CHECK(plan.Find(p.PriorityFor(1))->ceil_bps / kMbit == 60);
}

TEST_CASE("validation errors name the NIC and the container", "[shaping]") {
  HtbPlanner p("eth3");
  auto zero = p.Plan(1000, {{77, QosLevel::kShared, Mbit(0)}});
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(zero.status().message(), Catch::Contains("eth3") && Catch::Contains("container 77"));

  auto big = p.Plan(1000, {{78, QosLevel::kShared, Mbit(1001)}});
  REQUIRE_FALSE(big.ok());
  CHECK_THAT(big.status().message(), Catch::Contains("eth3") && Catch::Contains("container 78") &&
                                         Catch::Contains("exceeds the link rate"));

  auto dup = p.Plan(1000, {{79, QosLevel::kShared, Mbit(1)}, {79, QosLevel::kSystem, Mbit(2)}});
  REQUIRE_FALSE(dup.ok());
  CHECK_THAT(dup.status().message(), Catch::Contains("container 79"));

  auto bad_level = p.Plan(1000, {{80, static_cast<QosLevel>(9), 1}});
  REQUIRE_FALSE(bad_level.ok());
  CHECK_THAT(bad_level.status().message(), Catch::Contains("container 80"));

  auto no_link = p.Plan(0, {});
  REQUIRE_FALSE(no_link.ok());
  CHECK_THAT(no_link.status().message(), Catch::Contains("eth3"));
  CHECK(p.minors().size() == 0);  // failures allocate nothing

  ShapingConfig bad;
  bad.levels[1].rate_permille = 900;
  bad.levels[1].ceil_permille = 800;
  HtbPlanner q("eth4", bad);
  auto cfg = q.Plan(1000, {});
  REQUIRE_FALSE(cfg.ok());
  CHECK_THAT(cfg.status().message(), Catch::Contains("eth4") && Catch::Contains("dedicated"));
}

TEST_CASE("QoS level names and handle text", "[shaping]") {
  CHECK(*ParseQosLevel("dedicated_cores") == QosLevel::kDedicated);
  CHECK(*ParseQosLevel("reclaimed") == QosLevel::kReclaimed);
  CHECK_FALSE(ParseQosLevel("gold").ok());
  CHECK(TcHandleText(H(0x31)) == "10:31");
  CHECK(TcHandleText(H(0x100)) == "10:100");
  CHECK(TcHandleText(H(0)) == "10:");
  CHECK(TcHandleText(0x80010000u) == "8001:");
}

namespace {

HtbPlan MustBuild(uint64_t link, const std::vector<ContainerAllocation>& cs,
                  const ShapingConfig& config = {}) {
  auto plan = BuildHtbPlan("eth5", config, link, cs);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  return *plan;
}

}  // namespace

TEST_CASE("BuildHtbPlan puts each container on the minor it carries", "[shaping]") {
  HtbPlan plan =
      MustBuild(1000, {{1, QosLevel::kShared, Mbit(100), 0, false, 0x200},
                       {2, QosLevel::kDedicated, Mbit(50), 0, false, 0x150},
                       {3, QosLevel::kShared, Mbit(30), 0, false, 0x100},
                       {4, QosLevel::kReclaimed, Mbit(20), 0, false, kLastContainerMinor}});
  CHECK(plan.nic == "eth5");
  CHECK(plan.link_mbps == 1000);
  CHECK(plan.default_minor == 0x31u);
  CHECK(Handles(plan) == std::vector<uint32_t>{H(1), H(0x10), H(0x11), H(0x20), H(0x21), H(0x150),
                                               H(0x30), H(0x31), H(0x100), H(0x200), H(0x40),
                                               H(0x41), H(0xfffe)});
  struct Leaf {
    uint32_t minor;
    uint64_t key;
    uint32_t parent_minor;
    uint64_t mbps;
    uint32_t prio;
  };
  for (const Leaf& want : {Leaf{0x200, 1, 0x30, 100, 2}, Leaf{0x150, 2, 0x20, 50, 1},
                           Leaf{0x100, 3, 0x30, 30, 2}, Leaf{0xfffe, 4, 0x40, 20, 3}}) {
    INFO("minor " << want.minor);
    const PlannedClass* leaf = plan.Find(H(want.minor));
    REQUIRE(leaf);
    CHECK(leaf->container_key == std::optional<uint64_t>(want.key));
    CHECK(leaf->parent == H(want.parent_minor));
    CHECK(leaf->rate_bps / kMbit == want.mbps);
    CHECK(leaf->ceil_bps / kMbit == want.mbps);
    CHECK(leaf->prio == want.prio);
  }
  CHECK(plan.Find(H(0x31))->rate_bps / kMbit == 400 - 130);
  CHECK(plan.overcommit.empty());
  // Same input, same plan: nothing is allocated behind the caller's back.
  CHECK(MustBuild(1000, {{1, QosLevel::kShared, Mbit(100), 0, false, 0x200},
                         {2, QosLevel::kDedicated, Mbit(50), 0, false, 0x150},
                         {3, QosLevel::kShared, Mbit(30), 0, false, 0x100},
                         {4, QosLevel::kReclaimed, Mbit(20), 0, false, kLastContainerMinor}})
            .classes == plan.classes);
}

TEST_CASE("BuildHtbPlan rejects bad minors, keys, rates and links", "[shaping]") {
  struct Row {
    const char* what;
    uint64_t link;
    std::vector<ContainerAllocation> containers;
    std::vector<std::string> message;  // substrings
  };
  const std::vector<Row> rows = {
      {"no minor",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0}},
       {"container 7", "outside"}},
      {"level minor",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0x31}},
       {"container 7", "outside"}},
      {"just below the range",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0xff}},
       {"outside"}},
      {"just above the range",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0xffff}},
       {"outside"}},
      {"beyond 16 bits", 1000, {{7, QosLevel::kShared, Mbit(10), 0, false, 0x10100}}, {"outside"}},
      {"duplicate minor",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0x100},
        {8, QosLevel::kSystem, Mbit(10), 0, false, 0x100}},
       {"container 8", "10:100", "another container"}},
      {"duplicate key",
       1000,
       {{7, QosLevel::kShared, Mbit(10), 0, false, 0x100},
        {7, QosLevel::kShared, Mbit(10), 0, false, 0x101}},
       {"container 7", "more than once"}},
      {"0 bit/s",
       1000,
       {{7, QosLevel::kShared, Mbit(0), 0, false, 0x100}},
       {"container 7", "0 bit/s"}},
      {"above the link",
       1000,
       {{7, QosLevel::kShared, Mbit(1001), 0, false, 0x100}},
       {"container 7", "exceeds the link rate"}},
      {"unknown level",
       1000,
       {{7, static_cast<QosLevel>(4), Mbit(10), 0, false, 0x100}},
       {"container 7"}},
      {"no link rate", 0, {}, {"link rate is 0"}},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    auto plan = BuildHtbPlan("eth5", {}, row.link, row.containers);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(plan.status().message(), Catch::Contains("eth5"));
    for (const auto& part : row.message) CHECK_THAT(plan.status().message(), Catch::Contains(part));
  }
  // The bounds themselves are fine, as is a container at exactly the link rate.
  (void)MustBuild(1000, {{7, QosLevel::kShared, Mbit(1000), 0, false, kFirstContainerMinor},
                         {8, QosLevel::kShared, Mbit(1), 0, false, kLastContainerMinor}});

  ShapingConfig bad;
  bad.levels[3].prio = 8;
  auto cfg = BuildHtbPlan("eth5", bad, 1000, {});
  REQUIRE_FALSE(cfg.ok());
  CHECK_THAT(cfg.status().message(), Catch::Contains("eth5") && Catch::Contains("reclaimed"));
}

TEST_CASE("BuildHtbPlan gives the same plan as HtbPlanner for the planner's minors", "[shaping]") {
  ShapingConfig custom;
  custom.levels[0] = {100, 500, 1};
  custom.levels[2] = {200, 800, 4};
  custom.default_level = QosLevel::kReclaimed;
  custom.default_leaf_min_mbps = 5;
  struct Row {
    const char* what;
    ShapingConfig config;
    uint64_t link;
    std::vector<ContainerAllocation> containers;
  };
  const std::vector<Row> rows = {
      {"empty", {}, 10000, {}},
      {"mixed levels",
       {},
       1000,
       {{9, QosLevel::kShared, Mbit(50)},
        {3, QosLevel::kDedicated, Mbit(100)},
        {5, QosLevel::kShared, Mbit(60)},
        {1, QosLevel::kSystem, Mbit(10)},
        {7, QosLevel::kReclaimed, Mbit(20)}}},
      {"over-committed",
       {},
       100,
       {{1, QosLevel::kShared, Mbit(60)}, {2, QosLevel::kShared, Mbit(50)}}},
      {"custom config",
       custom,
       2000,
       {{4, QosLevel::kSystem, Mbit(300)},
        {6, QosLevel::kShared, Mbit(100)},
        {8, QosLevel::kReclaimed, Mbit(7)}}},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    HtbPlanner planner("eth6", row.config);
    // A first plan with other containers, so that some minors come back from the free list.
    (void)MustPlan(planner, row.link,
                   {{100, QosLevel::kShared, Mbit(1)}, {101, QosLevel::kShared, Mbit(1)}});
    const HtbPlan want = MustPlan(planner, row.link, row.containers);
    std::vector<ContainerAllocation> with_minors = row.containers;
    for (auto& c : with_minors) c.minor = *planner.MinorFor(c.key);
    auto got = BuildHtbPlan("eth6", row.config, row.link, with_minors);
    INFO(got.status().message());
    REQUIRE(got.ok());
    CHECK(got->nic == want.nic);
    CHECK(got->link_mbps == want.link_mbps);
    CHECK(got->qdisc_handle == want.qdisc_handle);
    CHECK(got->default_minor == want.default_minor);
    CHECK(got->classes == want.classes);
    CHECK(got->overcommit == want.overcommit);
  }
}

TEST_CASE("a level ceiling holds the level's class and its default leaf below the configured one",
          "[shaping]") {
  LevelCeilings ceilings;
  ceilings[static_cast<size_t>(QosLevel::kReclaimed)] = 600;
  const std::vector<ContainerAllocation> cs = {
      {7, QosLevel::kReclaimed, Mbit(100), 0, false, 0x100}};
  auto plan = BuildHtbPlan("eth0", ShapingConfig{}, 10000, cs, ceilings);
  REQUIRE(plan.ok());
  const PlannedClass* level = plan->Find(H(LevelMinor(QosLevel::kReclaimed)));
  REQUIRE(level != nullptr);
  CHECK(level->ceil_bps / kMbit == 600);
  CHECK(level->rate_bps / kMbit == 600);  // the configured 15 % (1500) would exceed the ceiling
  const PlannedClass* dflt = plan->Find(H(LevelDefaultMinor(QosLevel::kReclaimed)));
  REQUIRE(dflt != nullptr);
  CHECK(dflt->ceil_bps / kMbit == 600);
  // The other levels keep borrowing up to the link.
  CHECK(plan->Find(H(LevelMinor(QosLevel::kShared)))->ceil_bps / kMbit == 10000);
  // A ceiling above the configured one changes nothing.
  ceilings[static_cast<size_t>(QosLevel::kReclaimed)] = 20000;
  auto wide = BuildHtbPlan("eth0", ShapingConfig{}, 10000, cs, ceilings);
  auto none = BuildHtbPlan("eth0", ShapingConfig{}, 10000, cs);
  REQUIRE(wide.ok());
  REQUIRE(none.ok());
  CHECK(wide->classes == none->classes);
}

TEST_CASE("BitRateText and BitsToBytes: rates for messages and for the kernel", "[shaping]") {
  CHECK(BitRateText(20'000'000) == "20 Mbit/s");
  CHECK(BitRateText(1'500'000) == "1.5 Mbit/s");
  CHECK(BitRateText(1'021'000'000) == "1.021 Gbit/s");
  CHECK(BitRateText(1'000'000'000) == "1 Gbit/s");
  CHECK(BitRateText(800'000) == "800 kbit/s");
  CHECK(BitRateText(1'234) == "1.234 kbit/s");
  CHECK(BitRateText(999) == "999 bit/s");
  CHECK(BitRateText(0) == "0 bit/s");
  CHECK(BitsToBytes(8) == 1);
  CHECK(BitsToBytes(9) == 2);  // rounded up: a rate never ends below its bit rate
  CHECK(BitsToBytes(MbitToBits(100)) == 12'500'000);
}

TEST_CASE("a leaf with a ceiling above its rate, and a borrowing one, in the plan", "[shaping]") {
  const std::vector<ContainerAllocation> leaves = {
      {1, QosLevel::kShared, 1'500'000, 20'000'000, false, 0x100},  // an annotated pod: 1.5M..20M
      {2, QosLevel::kShared, Mbit(50), 0, true, 0x101},             // borrows to the level
  };
  ShapingConfig config;
  config.levels[static_cast<size_t>(QosLevel::kShared)] = {100, 300, 2};
  auto plan = BuildHtbPlan("eth0", config, 1000, leaves);
  REQUIRE(plan.ok());
  CHECK(plan->Find(H(0x100))->rate_bps == 1'500'000);
  CHECK(plan->Find(H(0x100))->ceil_bps == 20'000'000);
  CHECK(plan->Find(H(0x101))->rate_bps == Mbit(50));
  CHECK(plan->Find(H(0x101))->ceil_bps == Mbit(300));  // the shared level's ceiling
  // A ceiling below the rate, or one given with borrowing, is refused.
  auto bad = BuildHtbPlan("eth0", config, 1000,
                          {{3, QosLevel::kShared, Mbit(50), Mbit(40), false, 0x102}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::Contains("ceiling 40 Mbit/s is below its rate 50 Mbit/s"));
}

TEST_CASE("namespace aggregates: a class between the level and its namespace's leaves",
          "[shaping][aggregate]") {
  // Two leaves of an aggregated namespace (one borrowing) under aggregate 10:110, one leaf of
  // another namespace right under its level.
  std::vector<ContainerAllocation> cs = {
      {1, QosLevel::kShared, 50'000'000, 50'000'000, false, 0x100},
      {2, QosLevel::kShared, 1'000'000, 0, true, 0x101},
      {3, QosLevel::kShared, 20'000'000, 20'000'000, false, 0x102},
  };
  cs[0].group_minor = 0x110;
  cs[1].group_minor = 0x110;
  const std::vector<GroupClass> groups = {{0x110, QosLevel::kShared, 51'000'000, 100'000'000}};
  auto plan = BuildHtbPlan("eth0", ShapingConfig{}, 1000, cs, {}, groups);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  const PlannedClass* group = plan->Find(MakeHandle(kQdiscMajor, 0x110));
  REQUIRE(group != nullptr);
  CHECK(group->parent == MakeHandle(kQdiscMajor, 0x30));
  CHECK(group->rate_bps == 51'000'000);
  CHECK(group->ceil_bps == 100'000'000);
  CHECK_FALSE(group->container_key.has_value());
  CHECK(plan->Find(MakeHandle(kQdiscMajor, 0x100))->parent == group->handle);
  const PlannedClass* borrower = plan->Find(MakeHandle(kQdiscMajor, 0x101));
  CHECK(borrower->parent == group->handle);
  CHECK(borrower->ceil_bps == 100'000'000);  // borrows up to the aggregate, not the level
  CHECK(plan->Find(MakeHandle(kQdiscMajor, 0x102))->parent == MakeHandle(kQdiscMajor, 0x30));
  // Parents before children.
  size_t group_at = 0, leaf_at = 0;
  for (size_t i = 0; i < plan->classes.size(); ++i) {
    if (plan->classes[i].handle == group->handle) group_at = i;
    if (plan->classes[i].handle == MakeHandle(kQdiscMajor, 0x100)) leaf_at = i;
  }
  CHECK(group_at < leaf_at);
  // The level's guarantee counts the aggregate's rate, not its leaves' again.
  const PlannedClass* level = plan->Find(MakeHandle(kQdiscMajor, 0x30));
  CHECK(level->rate_bps >= 51'000'000 + 20'000'000);

  // Without aggregates the same leaves plan as before: no extra class.
  std::vector<ContainerAllocation> plain = cs;
  for (auto& c : plain) c.group_minor = 0;
  auto without = BuildHtbPlan("eth0", ShapingConfig{}, 1000, plain);
  REQUIRE(without.ok());
  CHECK(without->classes.size() + 1 == plan->classes.size());
}

TEST_CASE("namespace aggregates: bad groups are refused, naming them", "[shaping][aggregate]") {
  ContainerAllocation leaf{1, QosLevel::kShared, 10'000'000, 10'000'000, false, 0x100};
  leaf.group_minor = 0x110;
  struct Row {
    std::vector<GroupClass> groups;
    const char* error;
  };
  const std::vector<Row> rows = {
      {{}, "is not planned"},
      {{{0x110, QosLevel::kReclaimed, 1000, 1000}}, "no aggregate class 10:110 of its level"},
      {{{0x100, QosLevel::kShared, 1000, 1000}}, "is an aggregate's"},
      {{{0x110, QosLevel::kShared, 2000, 1000}}, "must be 0 < rate <= ceiling <= link"},
      {{{0x10, QosLevel::kShared, 1000, 1000}}, "outside the container range"},
      {{{0x110, QosLevel::kShared, 1000, 1000}, {0x110, QosLevel::kShared, 1000, 1000}},
       "listed more than once"},
  };
  for (const auto& row : rows) {
    auto plan = BuildHtbPlan("eth0", ShapingConfig{}, 1000, {leaf}, {}, row.groups);
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(plan.status().message(), Catch::Contains(row.error));
  }
}

TEST_CASE("ValidateLevelConfig gives the bare reason, ValidateConfig names the level",
          "[shaping]") {
  struct Row {
    LevelConfig level;
    std::string error;  // "" = valid
  };
  for (const auto& row : std::vector<Row>{
           {{0, 1000, 0}, ""},
           {{1000, 1000, 7}, ""},
           {{0, 1001, 0}, "rate and ceil are permille of the link, at most 1000"},
           {{1001, 1000, 0}, "rate and ceil are permille of the link, at most 1000"},
           {{0, 0, 0}, "ceil must be positive"},
           {{11, 10, 0}, "rate exceeds ceil"},
           {{0, 1000, 8}, "HTB prio must be 0..7"},
       }) {
    INFO(row.error);
    const netqos::Status st = ValidateLevelConfig(row.level);
    ShapingConfig config;
    config.levels[static_cast<size_t>(QosLevel::kReclaimed)] = row.level;
    const netqos::Status whole = ValidateConfig(config);
    if (row.error.empty()) {
      CHECK(st.ok());
      CHECK(whole.ok());
    } else {
      CHECK(st.message() == row.error);
      CHECK(whole.message() == "shaping config level reclaimed: " + row.error);
    }
  }
}

TEST_CASE("a plan installs its tree only where something is capped, or when asked to",
          "[shaping]") {
  const std::vector<ContainerAllocation> none;
  const std::vector<ContainerAllocation> one = {{7, QosLevel::kShared, Mbit(100), 0, false, 0x100}};
  // Levels that share the link out but cap nothing: the NIC keeps its own root.
  auto idle = BuildHtbPlan("eth0", ShapingConfig{}, 1000, none);
  REQUIRE(idle.ok());
  CHECK_FALSE(idle->shapes);
  CHECK(idle->classes.size() == 1 + 2 * kQosLevelCount);  // still described in full
  // A container's leaf caps it.
  auto leaf = BuildHtbPlan("eth0", ShapingConfig{}, 1000, one);
  REQUIRE(leaf.ok());
  CHECK(leaf->shapes);
  // So does a namespace aggregate, even before a leaf of its own is there.
  auto group = BuildHtbPlan("eth0", ShapingConfig{}, 1000, none, {},
                            {{0x110, QosLevel::kShared, Mbit(10), Mbit(100)}});
  REQUIRE(group.ok());
  CHECK(group->shapes);
  // And a level held below the link, by its configuration or by a ceiling (low-priority groups).
  ShapingConfig held;
  held.levels[static_cast<size_t>(QosLevel::kReclaimed)].ceil_permille = 500;
  auto configured = BuildHtbPlan("eth0", held, 1000, none);
  REQUIRE(configured.ok());
  CHECK(configured->shapes);
  LevelCeilings ceilings;
  ceilings[static_cast<size_t>(QosLevel::kReclaimed)] = 600;
  auto ceiled = BuildHtbPlan("eth0", ShapingConfig{}, 1000, none, ceilings);
  REQUIRE(ceiled.ok());
  CHECK(ceiled->shapes);
  // A ceiling at the link's rate or above caps nothing.
  ceilings[static_cast<size_t>(QosLevel::kReclaimed)] = 1000;
  auto at_link = BuildHtbPlan("eth0", ShapingConfig{}, 1000, none, ceilings);
  REQUIRE(at_link.ok());
  CHECK_FALSE(at_link->shapes);
  // --shape-idle-nics (or --qos-level-shaping): the tree everywhere.
  ShapingConfig always;
  always.shape_idle = true;
  auto kept = BuildHtbPlan("eth0", always, 1000, none);
  REQUIRE(kept.ok());
  CHECK(kept->shapes);
  CHECK(kept->classes == idle->classes);
}
