// --qos-level-shaping / --unclassified-qos-level → shaping::ShapingConfig.
#include "app/shaping_flags.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "enforce/desired_state.h"

namespace {

using netqos::StatusCode;
using netqos::app::BuildShapingConfig;
using netqos::app::DaemonConfig;
using netqos::enforce::DscpDefault;
using netqos::shaping::LevelConfig;
using netqos::shaping::QosLevel;
using netqos::shaping::ShapingConfig;

const netqos::shaping::LevelConfig& Level(const ShapingConfig& c, QosLevel l) {
  return c.levels[static_cast<size_t>(l)];
}

TEST_CASE("BuildShapingConfig: no flags gives ShapingConfig's defaults") {
  auto r = BuildShapingConfig(DaemonConfig{});
  REQUIRE(r.ok());
  const ShapingConfig defaults;
  for (size_t i = 0; i < defaults.levels.size(); ++i) {
    CHECK(r->levels[i].rate_permille == defaults.levels[i].rate_permille);
    CHECK(r->levels[i].ceil_permille == defaults.levels[i].ceil_permille);
    CHECK(r->levels[i].prio == defaults.levels[i].prio);
  }
  CHECK(r->default_level == QosLevel::kShared);
  CHECK(r->default_leaf_min_mbps == defaults.default_leaf_min_mbps);
}

// The --qos-level-shaping items are parsed when the flags are read (shaping/level_shaping.h, its
// errors in level_shaping_test.cc and daemon_config_test.cc); BuildShapingConfig applies the
// typed levels.
TEST_CASE("BuildShapingConfig: the levels given override their level only") {
  DaemonConfig c;
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kReclaimed)] = LevelConfig{100, 500, 7};
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kSystem)] = LevelConfig{0, 1000, 0};
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kDedicated)] = LevelConfig{300, 900, 2};
  c.unclassified_qos_level = QosLevel::kReclaimed;
  auto r = BuildShapingConfig(c);
  REQUIRE(r.ok());
  CHECK(Level(*r, QosLevel::kReclaimed).rate_permille == 100);
  CHECK(Level(*r, QosLevel::kReclaimed).ceil_permille == 500);
  CHECK(Level(*r, QosLevel::kReclaimed).prio == 7);
  CHECK(Level(*r, QosLevel::kSystem).rate_permille == 0);
  CHECK(Level(*r, QosLevel::kDedicated).rate_permille == 300);
  CHECK(Level(*r, QosLevel::kDedicated).ceil_permille == 900);
  CHECK(Level(*r, QosLevel::kShared).rate_permille == 400);  // untouched default
  CHECK(Level(*r, QosLevel::kShared).prio == 2);
  CHECK(r->default_level == QosLevel::kReclaimed);
}

TEST_CASE("BuildShapingConfig: idle NICs keep their own root unless told, or given level shares") {
  CHECK_FALSE(BuildShapingConfig(DaemonConfig{})->shape_idle);
  DaemonConfig told;
  told.shape_idle_nics = true;
  CHECK(BuildShapingConfig(told)->shape_idle);
  // Shares of the operator's own are to hold on every enforced NIC.
  DaemonConfig shares;
  shares.qos_level_shaping[static_cast<size_t>(QosLevel::kReclaimed)] = LevelConfig{100, 1000, 3};
  CHECK(BuildShapingConfig(shares)->shape_idle);
  // A level named with its default values changes nothing.
  DaemonConfig same;
  same.qos_level_shaping[static_cast<size_t>(QosLevel::kReclaimed)] =
      Level(ShapingConfig{}, QosLevel::kReclaimed);
  CHECK_FALSE(BuildShapingConfig(same)->shape_idle);
}

TEST_CASE("BuildShapingConfig: a level built in code is held to shaping's rules") {
  struct Case {
    LevelConfig level;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {{400, 1001, 2}, "at most 1000"},
           {{500, 400, 2}, "rate exceeds ceil"},
           {{0, 0, 2}, "ceil must be positive"},
           {{400, 1000, 8}, "prio"},
       }) {
    DaemonConfig cfg;
    cfg.qos_level_shaping[static_cast<size_t>(QosLevel::kShared)] = c.level;
    INFO(c.why);
    auto r = BuildShapingConfig(cfg);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::StartsWith("--qos-level-shaping: "));
    CHECK_THAT(r.status().message(), Catch::Contains("level shared: ") && Catch::Contains(c.why));
  }
}

TEST_CASE("BuildShapingConfig: guaranteed rates over the link are rejected") {
  DaemonConfig c;
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kReclaimed)] = LevelConfig{200, 1000, 3};
  auto r = BuildShapingConfig(c);  // 50 + 400 + 400 + 200
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::StartsWith("--qos-level-shaping: ") && Catch::Contains("1050"));
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kShared)] = LevelConfig{350, 1000, 2};
  CHECK(BuildShapingConfig(c).ok());  // exactly 1000
}

TEST_CASE("BuildShapingConfig: low-priority groups are off unless asked for, with their floor") {
  DaemonConfig c;
  auto off = BuildShapingConfig(c);
  REQUIRE(off.ok());
  CHECK_FALSE(off->low_priority_floor_percent.has_value());
  CHECK(c.low_priority_group_floor_percent == 5);  // Katalyst HEAD's constant
  c.low_priority_groups = true;
  auto on = BuildShapingConfig(c);
  REQUIRE(on.ok());
  CHECK(on->low_priority_floor_percent == 5u);
  c.low_priority_group_floor_percent = 12;
  CHECK(BuildShapingConfig(c)->low_priority_floor_percent == 12u);
  c.low_priority_group_floor_percent = 101;
  auto bad = BuildShapingConfig(c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("--low-priority-group-floor-percent"));
}

}  // namespace

// The items of --qos-level-dscp and --qos-level-burst are parsed when the flags are read
// (daemon_config_test.cc has their errors); BuildShapingConfig carries the typed values.
TEST_CASE("BuildShapingConfig: --qos-level-dscp gives each level its DSCP, none by default") {
  DaemonConfig none;
  auto d = BuildShapingConfig(none);
  REQUIRE(d.ok());
  for (const auto& v : d->dscp) CHECK_FALSE(v.has_value());

  DaemonConfig c;
  c.qos_level_dscp[static_cast<size_t>(QosLevel::kSystem)] = 46;
  c.qos_level_dscp[static_cast<size_t>(QosLevel::kDedicated)] = 34;
  auto r = BuildShapingConfig(c);
  REQUIRE(r.ok());
  CHECK(r->dscp[static_cast<size_t>(QosLevel::kSystem)] == std::optional<uint8_t>(46));
  CHECK(r->dscp[static_cast<size_t>(QosLevel::kDedicated)] == std::optional<uint8_t>(34));
  CHECK_FALSE(r->dscp[static_cast<size_t>(QosLevel::kShared)].has_value());
  // The reconciler takes the table as it is.
  auto options = netqos::enforce::DesiredOptionsFor(*r, true);
  CHECK(options.level_dscp == r->dscp);

  // A config built in code is held to the flag's range as well.
  c.qos_level_dscp[static_cast<size_t>(QosLevel::kShared)] = 64;
  auto bad = BuildShapingConfig(c);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("--qos-level-dscp: shared: DSCP 64 is out of range 0..63"));
}

TEST_CASE("BuildShapingConfig: --qos-level-burst gives each level its burst, auto by default") {
  DaemonConfig none;
  auto d = BuildShapingConfig(none);
  REQUIRE(d.ok());
  for (uint32_t v : d->burst_bytes) CHECK(v == 0);

  DaemonConfig c;
  c.qos_level_burst = {1600, 65536, 1000000, 0};
  auto r = BuildShapingConfig(c);
  REQUIRE(r.ok());
  CHECK(r->burst_bytes[static_cast<size_t>(QosLevel::kSystem)] == 1600);
  CHECK(r->burst_bytes[static_cast<size_t>(QosLevel::kDedicated)] == 65536);
  CHECK(r->burst_bytes[static_cast<size_t>(QosLevel::kShared)] == 1000000);
  CHECK(r->burst_bytes[static_cast<size_t>(QosLevel::kReclaimed)] == 0);
  auto options = netqos::enforce::DesiredOptionsFor(*r, true);
  CHECK(options.level_burst == r->burst_bytes);

  c.qos_level_burst[static_cast<size_t>(QosLevel::kShared)] = 1599;
  auto bad = BuildShapingConfig(c);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("--qos-level-burst: shared: 1599 bytes is outside 1600.."));
}

TEST_CASE("BuildShapingConfig: --dscp-default gives the unmarked packets' DSCP") {
  using Kind = DscpDefault::Kind;
  constexpr size_t kShared = static_cast<size_t>(QosLevel::kShared);
  struct Case {
    DscpDefault dscp_default;
    bool level_marked;
    std::optional<uint8_t> unmarked;
  };
  for (const auto& c : std::vector<Case>{
           {{Kind::kAuto, 0}, false, std::nullopt},  // nothing marked: the senders' stays
           {{Kind::kAuto, 0}, true, 0},              // a level marked: CS0 for the rest
           {{Kind::kKeep, 0}, false, std::nullopt},
           {{Kind::kKeep, 0}, true, std::nullopt},
           {{Kind::kDscp, 8}, false, 8},
           {{Kind::kDscp, 46}, true, 46},
       }) {
    DaemonConfig cfg;
    cfg.dscp_default = c.dscp_default;
    if (c.level_marked) cfg.qos_level_dscp[kShared] = 10;
    INFO(static_cast<int>(c.dscp_default.kind)
         << " " << int{c.dscp_default.dscp} << " " << c.level_marked);
    auto r = BuildShapingConfig(cfg);
    REQUIRE(r.ok());
    CHECK(r->unmarked_dscp == c.unmarked);
  }

  DaemonConfig bad;
  bad.dscp_default = {Kind::kDscp, 64};
  auto r = BuildShapingConfig(bad);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::StartsWith("--dscp-default: DSCP 64 is out of range 0..63"));
}
