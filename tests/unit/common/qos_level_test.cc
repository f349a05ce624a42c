// The one QoS level enum and its spelling table: every layer's names come from here.
#include "common/qos_level.h"

#include <catch2/catch.hpp>

using netqos::KatalystLevelName;
using netqos::ParseQosLevel;
using netqos::QosLevel;
using netqos::QosLevelName;

TEST_CASE("QoS levels: Katalyst's and the short names of each level, both ways") {
  const struct {
    QosLevel level;
    const char* katalyst;
    const char* short_name;
  } rows[] = {{QosLevel::kSystem, "system_cores", "system"},
              {QosLevel::kDedicated, "dedicated_cores", "dedicated"},
              {QosLevel::kShared, "shared_cores", "shared"},
              {QosLevel::kReclaimed, "reclaimed_cores", "reclaimed"}};
  for (const auto& r : rows) {
    INFO(r.katalyst);
    CHECK(KatalystLevelName(static_cast<uint8_t>(r.level)) == r.katalyst);
    CHECK(std::string(QosLevelName(r.level)) == r.short_name);
    CHECK(*ParseQosLevel(r.katalyst) == r.level);
    CHECK(*ParseQosLevel(r.short_name) == r.level);
  }
}

TEST_CASE("QoS levels: a class entry's byte beyond the levels is unknown, a bad name is named") {
  for (uint8_t b : {uint8_t{4}, uint8_t{200}, uint8_t{255}})
    CHECK(KatalystLevelName(b) == "unknown");
  CHECK(std::string(QosLevelName(static_cast<QosLevel>(9))) == "unknown");
  auto bad = ParseQosLevel("gold");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "unknown QoS level \"gold\"");
}
