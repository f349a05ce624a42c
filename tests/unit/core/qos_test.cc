// QoS level resolution and annotation filtering, and the strict JSON reader behind
// the enhancement annotations.
#include "core/qos.h"

#include <catch2/catch.hpp>

#include "core/constants.h"
#include "core/json_object.h"

namespace netqos::core {
namespace {

TEST_CASE("ResolveQosLevel", "[qos]") {
  QosConfig config;
  CHECK(*ResolveQosLevel(config, {}) == kSharedCores);
  CHECK(*ResolveQosLevel(config, {{"other", "x"}}) == kSharedCores);
  for (const char* level : {kSharedCores, kReclaimedCores, kDedicatedCores, kSystemCores}) {
    CHECK(*ResolveQosLevel(config, {{kQosLevelKey, level}}) == level);
  }
  auto bad = ResolveQosLevel(config, {{kQosLevelKey, "foo"}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("can't get valid qos level"));

  SECTION("extra selectors") {
    config.extra_selectors[kReclaimedCores] = {{"example.com/offline", "true"}};
    CHECK(*ResolveQosLevel(config, {{"example.com/offline", "true"}}) == kReclaimedCores);
    // Present with another value and no match anywhere: not the default either, but shared's
    // selector is not involved, so shared_cores.
    CHECK(*ResolveQosLevel(config, {{"example.com/offline", "false"}}) == kSharedCores);
    auto conflict =
        ResolveQosLevel(config, {{"example.com/offline", "true"}, {kQosLevelKey, kSharedCores}});
    REQUIRE_FALSE(conflict.ok());
    CHECK_THAT(
        conflict.status().message(),
        Catch::Contains("qos reclaimed_cores conflicts, matched count 1, mis matched count 1"));
  }
}

TEST_CASE("FilterRequest flattens and filters", "[qos]") {
  QosConfig config;
  StringMap ann = {{kQosLevelKey, kSharedCores},
                   {kDefaultNetClassAnnotationKey, "12345"},
                   {kNetworkEnhancementKey, R"({"namespace_type": "host_ns_preferred"})"},
                   {"unrelated", "x"}};
  StringMap labels = {{"app", "web"}};
  auto f = FilterRequest(config, labels, ann);
  REQUIRE(f.ok());
  CHECK(f->qos_level == kSharedCores);
  CHECK(f->annotations ==
        StringMap{{kQosLevelKey, kSharedCores}, {kNamespaceTypeKey, kHostNsPreferred}});
  CHECK(f->labels == StringMap{{kQosLevelKey, kSharedCores}});

  SECTION("qos_level is written even when absent") {
    auto g = FilterRequest(config, {}, {});
    REQUIRE(g.ok());
    CHECK(g->annotations == StringMap{{kQosLevelKey, kSharedCores}});
    CHECK(g->labels == StringMap{{kQosLevelKey, kSharedCores}});
  }
  SECTION("later enhancements override earlier ones; cpu/memory are lenient") {
    StringMap a = {{kCpuEnhancementKey, R"({"k": "cpu", "c": "1", "n": 5})"},
                   {kMemoryEnhancementKey, R"({"k": "mem", "m": "2"})"},
                   {kNetworkEnhancementKey, R"({"k": "net"})"}};
    auto g = FilterRequest(config, {}, a);
    REQUIRE(g.ok());
    CHECK(g->annotations ==
          StringMap{{kQosLevelKey, kSharedCores}, {"k", "net"}, {"c", "1"}, {"m", "2"}});
  }
  SECTION("aliases: the default key wins, the alias is used when alone") {
    config.enhancement_aliases[kNetworkEnhancementKey] = "example.com/net";
    auto alone =
        FilterRequest(config, {}, {{"example.com/net", R"({"namespace_type": "host_ns"})"}});
    REQUIRE(alone.ok());
    CHECK(alone->annotations.at(kNamespaceTypeKey) == kHostNs);
    auto both = FilterRequest(config, {},
                              {{"example.com/net", R"({"namespace_type": "host_ns"})"},
                               {kNetworkEnhancementKey, R"({"namespace_type": "anti_host_ns"})"}});
    REQUIRE(both.ok());
    CHECK(both->annotations.at(kNamespaceTypeKey) == kAntiHostNs);
    auto broken = FilterRequest(config, {}, {{"example.com/net", "{"}});
    REQUIRE_FALSE(broken.ok());
    CHECK_THAT(broken.status().message(), Catch::Contains("annotation example.com/net"));
  }
  SECTION("defaults fill absent keys only") {
    config.enhancement_defaults = {{kTopologyAffinityRestrictedKey, "true"}, {"x", "d"}};
    auto g = FilterRequest(config, {}, {{kNetworkEnhancementKey, R"({"x": "set"})"}});
    REQUIRE(g.ok());
    CHECK(g->annotations.at(kTopologyAffinityRestrictedKey) == "true");
    CHECK(g->annotations.at("x") == "set");
  }
  SECTION("kept keys are merged in, below QoS and enhancement keys") {
    config.annotation_kept_keys = {"unrelated", kNamespaceTypeKey};
    config.label_kept_keys = {"app"};
    StringMap a = ann;
    a[kNamespaceTypeKey] = "raw";
    auto g = FilterRequest(config, labels, a);
    REQUIRE(g.ok());
    CHECK(g->annotations.at("unrelated") == "x");
    CHECK(g->annotations.at(kNamespaceTypeKey) == kHostNsPreferred);
    CHECK(g->labels == StringMap{{kQosLevelKey, kSharedCores}, {"app", "web"}});
  }
  SECTION("a raw namespace_type annotation is ignored") {
    auto g = FilterRequest(config, {}, {{kNamespaceTypeKey, kHostNs}});
    REQUIRE(g.ok());
    CHECK(g->annotations.count(kNamespaceTypeKey) == 0);
  }
  SECTION("duplicate keys: the last one wins") {
    auto g =
        FilterRequest(config, {},
                      {{kNetworkEnhancementKey,
                        R"({"namespace_type": "host_ns", "namespace_type": "anti_host_ns"})"}});
    REQUIRE(g.ok());
    CHECK(g->annotations.at(kNamespaceTypeKey) == kAntiHostNs);
  }
}

TEST_CASE("ParseJsonObject validates full JSON syntax", "[qos][json]") {
  auto ok = ParseJsonObject(
      R"( {"a": "x\"y\u00e9\ud83d\ude00", "b": 1.5e-3, "c": [1, {"d": null}], "e": false,
           "f": {}, "g": null, "h": -0} )");
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 7);
  CHECK((*ok)[0].key == "a");
  CHECK((*ok)[0].type == JsonType::kString);
  CHECK((*ok)[0].string_value == "x\"y\xc3\xa9\xf0\x9f\x98\x80");
  CHECK((*ok)[1].type == JsonType::kNumber);
  CHECK((*ok)[2].type == JsonType::kArray);
  CHECK((*ok)[3].type == JsonType::kBool);
  CHECK((*ok)[4].type == JsonType::kObject);
  CHECK((*ok)[5].type == JsonType::kNull);
  CHECK(ParseJsonObject("null")->empty());
  CHECK(ParseJsonObject("{}")->empty());
  for (const char* bad : {"",
                          "   ",
                          "{",
                          "}",
                          "{\"a\"}",
                          "{\"a\":}",
                          "{\"a\":1,}",
                          "{a:1}",
                          "{'a':1}",
                          "{\"a\":01}",
                          "{\"a\":1.}",
                          "{\"a\":.5}",
                          "{\"a\":+1}",
                          "{\"a\":\"\\x\"}",
                          "{\"a\":\"\t\"}",
                          "{\"a\":tru}",
                          "{} {}",
                          "{\"a\":[1,]}",
                          "{\"a\":\"\\u12\"}",
                          "[]",
                          "\"s\"",
                          "1",
                          "true",
                          "{\"a\":NaN}"}) {
    INFO(bad);
    CHECK_FALSE(ParseJsonObject(bad).ok());
  }
  std::string deep(2000, '[');
  CHECK_FALSE(ParseJsonObject("{\"a\":" + deep + "}").ok());
}

TEST_CASE("kept annotation keys: Katalyst HEAD's two defaults are kept without any flag",
          "[qos][kept]") {
  QosConfig config;
  CHECK(config.annotation_kept_keys ==
        std::vector<std::string>{kPodAggregatedRequestsKey, kInplaceUpdateResizingKey});
  CHECK(config.label_kept_keys.empty());
  const StringMap ann = {{kPodAggregatedRequestsKey, R"({"cpu":"2"})"},
                         {kInplaceUpdateResizingKey, "true"},
                         {"example.com/other", "dropped"}};
  auto f = FilterRequest(config, {}, ann);
  REQUIRE(f.ok());
  CHECK(f->annotations == StringMap{{kQosLevelKey, kSharedCores},
                                    {kPodAggregatedRequestsKey, R"({"cpu":"2"})"},
                                    {kInplaceUpdateResizingKey, "true"}});
}

}  // namespace
}  // namespace netqos::core
