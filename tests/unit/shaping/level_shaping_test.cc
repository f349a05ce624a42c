// --qos-level-shaping's items: "<level>=<rate_permille>:<ceil_permille>:<prio>", read once.
#include "shaping/level_shaping.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

using netqos::StatusCode;
using namespace netqos::shaping;

namespace {

std::optional<LevelConfig> At(const LevelShaping& s, QosLevel l) {
  return s[static_cast<size_t>(l)];
}

TEST_CASE("ParseLevelShaping: rate, ceil and prio") {
  struct Case {
    std::string text;
    LevelConfig want;
  };
  for (const auto& c : std::vector<Case>{
           {"0:1000:0", {0, 1000, 0}},
           {"150:1000:3", {150, 1000, 3}},
           {"1000:1000:7", {1000, 1000, 7}},
           {"0:1:0", {0, 1, 0}},
           {"007:010:1", {7, 10, 1}},
       }) {
    INFO(c.text);
    auto r = ParseLevelShaping(c.text);
    REQUIRE(r.ok());
    CHECK(*r == c.want);
  }
}

TEST_CASE("ParseLevelShaping: rejects malformed values and classes HTB cannot have") {
  struct Case {
    std::string text;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {"", "expected <rate_permille>:<ceil_permille>:<prio> after '='"},
           {"400:1000", "expected <rate_permille>"},
           {"400:1000:2:1", "expected <rate_permille>"},
           {"a:1000:2", "non-negative integers"},
           {"-1:1000:2", "non-negative integers"},
           {"400::2", "non-negative integers"},
           {"400:1000: 2", "non-negative integers"},
           {"400:1000:", "non-negative integers"},
           {"9999999999:1000:2", "non-negative integers"},
           {"400:1001:2", "at most 1000"},
           {"1001:1001:2", "at most 1000"},
           {"500:400:2", "rate exceeds ceil"},
           {"0:0:2", "ceil must be positive"},
           {"400:1000:8", "prio must be 0..7"},
       }) {
    INFO(c.text);
    auto r = ParseLevelShaping(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(c.why));
  }
}

TEST_CASE("ParseLevelShapingItems: levels by either spelling, the rest left to the defaults") {
  LevelShaping none{};
  REQUIRE(ParseLevelShapingItems({}, "--qos-level-shaping", &none).ok());
  for (const auto& l : none) CHECK_FALSE(l.has_value());

  LevelShaping s{};
  REQUIRE(ParseLevelShapingItems(
              {"reclaimed_cores=100:500:7", "system=0:1000:0", "dedicated=300:900:2"},
              "--qos-level-shaping", &s)
              .ok());
  CHECK(At(s, QosLevel::kReclaimed) == LevelConfig{100, 500, 7});
  CHECK(At(s, QosLevel::kSystem) == LevelConfig{0, 1000, 0});
  CHECK(At(s, QosLevel::kDedicated) == LevelConfig{300, 900, 2});
  CHECK_FALSE(At(s, QosLevel::kShared).has_value());
}

TEST_CASE("ParseLevelShapingItems: rejections name the flag and the item") {
  struct Case {
    std::vector<std::string> items;
    std::string bad;  // the item the message must quote
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {{"shared"}, "shared", "expected <level>=<rate_permille>:<ceil_permille>:<prio>"},
           {{"=400:1000:2"}, "=400:1000:2", "unknown QoS level"},
           {{"gold=400:1000:2"}, "gold=400:1000:2", "unknown QoS level"},
           {{"shared="}, "shared=", "expected <rate_permille>"},
           {{"shared=400:1000"}, "shared=400:1000", "expected <rate_permille>"},
           {{"shared=a:1000:2"}, "shared=a:1000:2", "non-negative integers"},
           {{"shared=500:400:2"}, "shared=500:400:2", "rate exceeds ceil"},
           {{"shared=400:1000:8"}, "shared=400:1000:8", "prio"},
           {{"shared=100:1000:2", "shared_cores=200:1000:2"},
            "shared_cores=200:1000:2",
            "level already set by \"shared=100:1000:2\""},
       }) {
    INFO(c.bad);
    LevelShaping s{};
    netqos::Status st = ParseLevelShapingItems(c.items, "--qos-level-shaping", &s);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::StartsWith("--qos-level-shaping: \"" + c.bad + "\": "));
    CHECK_THAT(st.message(), Catch::Contains(c.why));
  }
}

}  // namespace
