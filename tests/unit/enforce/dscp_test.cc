// DSCP marking: the value grammar (numbers, names), --qos-level-dscp items, and the choice between
// a pod's netqos.io/dscp annotation and its QoS level's value, through ComputeDesiredState too.
#include "enforce/dscp.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "enforce/desired_state.h"
#include "support/observed_container.h"

namespace {

using Catch::Contains;
using netqos::StatusCode;
using netqos::core::StringMap;
using netqos::enforce::DscpDefault;
using netqos::enforce::DscpText;
using netqos::enforce::kDscpAnnotation;
using netqos::enforce::LevelDscp;
using netqos::enforce::ParseDscp;
using netqos::enforce::ParseDscpDefault;
using netqos::enforce::ParseLevelDscpItems;
using netqos::shaping::QosLevel;

std::optional<uint8_t> At(const LevelDscp& t, QosLevel l) { return t[static_cast<size_t>(l)]; }

}  // namespace

TEST_CASE("ParseDscp: numbers 0..63") {
  for (const auto& [text, want] : std::vector<std::pair<std::string, uint8_t>>{
           {"0", 0}, {"1", 1}, {"46", 46}, {"63", 63}, {"063", 63}, {"0000000000046", 46}}) {
    INFO(text);
    auto r = ParseDscp(text);
    REQUIRE(r.ok());
    CHECK(*r == want);
  }
}

TEST_CASE("ParseDscp: standard names, any case") {
  for (const auto& [text, want] : std::vector<std::pair<std::string, uint8_t>>{{"EF", 46},
                                                                               {"ef", 46},
                                                                               {"Ef", 46},
                                                                               {"CS0", 0},
                                                                               {"cs1", 8},
                                                                               {"CS5", 40},
                                                                               {"CS7", 56},
                                                                               {"AF11", 10},
                                                                               {"af12", 12},
                                                                               {"AF13", 14},
                                                                               {"AF21", 18},
                                                                               {"AF31", 26},
                                                                               {"AF41", 34},
                                                                               {"Af42", 36},
                                                                               {"AF43", 38}}) {
    INFO(text);
    auto r = ParseDscp(text);
    REQUIRE(r.ok());
    CHECK(*r == want);
  }
}

TEST_CASE("ParseDscp: rejects what is neither") {
  std::vector<std::string> bad = {"",
                                  "64",
                                  "100",
                                  "255",
                                  "99999999999999999999",
                                  "-1",
                                  "+1",
                                  " 46",
                                  "46 ",
                                  "4 6",
                                  "0x2e",
                                  "46.0",
                                  "CS8",
                                  "CS",
                                  "CS01",
                                  "AF",
                                  "AF10",
                                  "AF14",
                                  "AF51",
                                  "AF01",
                                  "AF111",
                                  "EF1",
                                  "E",
                                  "BE",
                                  "default",
                                  "\xef\xbc\x94\xef\xbc\x96"};
  bad.push_back(
      std::string("4\0"
                  "6",
                  3));  // an embedded NUL
  for (const std::string& text : bad) {
    INFO(text);
    auto r = ParseDscp(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK_THAT(ParseDscp("64").status().message(), Contains("0..63"));
  CHECK_THAT(ParseDscp("gold").status().message(), Contains("EF, CS0..CS7, AF11..AF43"));
}

TEST_CASE("ParseDscpDefault: auto, keep or a DSCP") {
  using Kind = DscpDefault::Kind;
  struct Case {
    std::string text;
    DscpDefault want;
  };
  for (const auto& c : std::vector<Case>{
           {"auto", {Kind::kAuto, 0}},
           {"keep", {Kind::kKeep, 0}},
           {"0", {Kind::kDscp, 0}},
           {"63", {Kind::kDscp, 63}},
           {"CS0", {Kind::kDscp, 0}},
           {"ef", {Kind::kDscp, 46}},
           {"AF41", {Kind::kDscp, 34}},
       }) {
    INFO(c.text);
    auto r = ParseDscpDefault(c.text, "--dscp-default");
    REQUIRE(r.ok());
    CHECK(*r == c.want);
  }
  CHECK(DscpDefault{} == DscpDefault{Kind::kAuto, 0});
}

TEST_CASE("ParseDscpDefault: rejections name the flag and the value") {
  struct Case {
    std::string text;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {"", "empty DSCP"},
           {"64", "out of range 0..63"},
           {"Auto", "a number 0..63 or a name"},
           {"KEEP", "a number 0..63 or a name"},
           {"AF44", "a number 0..63 or a name"},
           {"-1", "a number 0..63 or a name"},
       }) {
    INFO(c.text);
    auto r = ParseDscpDefault(c.text, "--flag");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::StartsWith("--flag: \"" + c.text + "\": "));
    CHECK_THAT(r.status().message(), Contains(c.why) && Catch::EndsWith(", or auto or keep"));
  }
  // A long value is quoted by its first 64 characters only.
  const std::string long_text(100, 'x');
  auto r = ParseDscpDefault(long_text, "--flag");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("\"" + long_text.substr(0, 64) + "\": "));
  CHECK_THAT(r.status().message(), !Contains(long_text.substr(0, 65)));
}

TEST_CASE("DscpText names the standard codepoints") {
  CHECK(DscpText(46) == "46 (EF)");
  CHECK(DscpText(0) == "0 (CS0)");
  CHECK(DscpText(56) == "56 (CS7)");
  CHECK(DscpText(34) == "34 (AF41)");
  CHECK(DscpText(5) == "5");
  CHECK(DscpText(42) == "42");  // 8 x 5 + 2: not an AF class
}

TEST_CASE("ParseLevelDscpItems: levels by either spelling, the rest unmarked") {
  LevelDscp t{};
  REQUIRE(ParseLevelDscpItems({"system_cores=46", "dedicated=af41", "reclaimed_cores=CS1"},
                              "--qos-level-dscp", &t)
              .ok());
  CHECK(At(t, QosLevel::kSystem) == std::optional<uint8_t>(46));
  CHECK(At(t, QosLevel::kDedicated) == std::optional<uint8_t>(34));
  CHECK(At(t, QosLevel::kShared) == std::nullopt);
  CHECK(At(t, QosLevel::kReclaimed) == std::optional<uint8_t>(8));

  LevelDscp none{};
  REQUIRE(ParseLevelDscpItems({}, "--qos-level-dscp", &none).ok());
  for (const auto& v : none) CHECK_FALSE(v.has_value());
}

TEST_CASE("ParseLevelDscpItems: rejections name the flag and the item") {
  for (const auto& [item, why] :
       std::vector<std::pair<std::string, std::string>>{{"shared", "expected <level>=<dscp>"},
                                                        {"=46", "unknown QoS level"},
                                                        {"gold=46", "unknown QoS level"},
                                                        {"shared=", "empty DSCP"},
                                                        {"shared=64", "0..63"},
                                                        {"shared=AF44", "AF11..AF43"},
                                                        {"shared=46=46", "0..63 or a name"}}) {
    INFO(item);
    LevelDscp t{};
    auto st = ParseLevelDscpItems({item}, "--qos-level-dscp", &t);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::StartsWith("--qos-level-dscp: \"" + item + "\": "));
    CHECK_THAT(st.message(), Contains(why));
  }
  LevelDscp t{};
  auto twice = ParseLevelDscpItems({"shared=1", "shared_cores=2"}, "--qos-level-dscp", &t);
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.message(), Contains("\"shared_cores=2\"") && Contains("\"shared=1\""));
}

TEST_CASE("ComputeDesiredState: each container's class entry carries its DSCP") {
  using netqos::enforce::ComputeDesiredState;
  using netqos::enforce::DesiredOptions;
  using netqos::enforce::ObservedContainer;
  auto container = [](const std::string& uid, uint64_t cgroup_id, StringMap annotations) {
    return netqos::testing::ObservedIn(uid, "c", cgroup_id, std::move(annotations));
  };
  const char kQos[] = "katalyst.kubewharf.io/qos_level";
  DesiredOptions options{true};
  options.level_dscp[static_cast<size_t>(QosLevel::kDedicated)] = 34;
  // Namespace "ns" may claim dedicated_cores without an allocation and mark EF and CS0.
  auto policy = std::make_shared<netqos::enforce::TenantPolicy>();
  policy->namespaces["ns"].max_unallocated_level = QosLevel::kDedicated;
  policy->namespaces["ns"].dscp = {46, 0};
  options.tenant = policy;
  netqos::shaping::MinorAllocator minors;
  const auto s = ComputeDesiredState(
      netqos::core::PolicyConfig{}, {},
      {container("u1", 41, {{kQos, "dedicated_cores"}}),
       container("u2", 42, {{kQos, "dedicated_cores"}, {kDscpAnnotation, "EF"}}),
       container("u3", 43, {{kQos, "shared_cores"}}),
       container("u4", 44, {{kQos, "shared_cores"}, {kDscpAnnotation, "0"}}),
       container("u5", 45, {{kQos, "dedicated_cores"}, {kDscpAnnotation, "AF5"}})},
      {}, {}, options, minors);
  REQUIRE(s.by_cgroup.size() == 5);
  CHECK(s.by_cgroup.at(41).entry.dscp == std::optional<uint8_t>(34));
  CHECK(s.by_cgroup.at(42).entry.dscp == std::optional<uint8_t>(46));
  CHECK(s.by_cgroup.at(43).entry.dscp == std::nullopt);
  CHECK(s.by_cgroup.at(44).entry.dscp == std::optional<uint8_t>(0));
  CHECK(s.by_cgroup.at(45).entry.dscp == std::optional<uint8_t>(34));
  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0],
             Catch::StartsWith("ns/pod-u5 container c: refused netqos.io/dscp=AF5: DSCP must be"));
  CHECK_THAT(s.problems[0], Contains("the dedicated level's DSCP 34 (AF41) stands"));
}
