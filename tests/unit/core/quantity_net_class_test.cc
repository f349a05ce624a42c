// Request quantity parsing and net class id resolution.
#include <catch2/catch.hpp>

#include "core/constants.h"
#include "core/net_class.h"
#include "core/quantity.h"

namespace netqos::core {
namespace {

TEST_CASE("ParseBandwidthRequest", "[quantity]") {
  auto one = [](double v) { return std::map<std::string, double>{{kResourceName, v}}; };
  CHECK(*ParseBandwidthRequest(kResourceName, one(0)) == 0);
  CHECK(*ParseBandwidthRequest(kResourceName, one(5000)) == 5000);
  CHECK(*ParseBandwidthRequest(kResourceName, one(0.0001)) == 1);
  CHECK(*ParseBandwidthRequest(kResourceName, one(4294967295.0)) == 4294967295u);
  CHECK(*ParseBandwidthRequest(kResourceName, one(-0.0)) == 0);
  CHECK_FALSE(ParseBandwidthRequest(kResourceName, one(4294967295.01)).ok());
  CHECK_FALSE(ParseBandwidthRequest(kResourceName, one(-0.5)).ok());
  CHECK_FALSE(ParseBandwidthRequest("cpu", one(1)).ok());
  CHECK_FALSE(ParseBandwidthRequest(kResourceName, {{"cpu", 1}}).ok());
  CHECK_FALSE(ParseBandwidthRequest(kResourceName, {}).ok());
}

TEST_CASE("ParseNetClassId", "[net_class]") {
  CHECK(*ParseNetClassId("0") == 0);
  CHECK(*ParseNetClassId("12345") == 12345);
  CHECK(*ParseNetClassId("007") == 7);  // strconv.ParseUint accepts leading zeros
  CHECK(*ParseNetClassId("4294967295") == 4294967295u);
  for (const char* bad :
       {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "4294967296", "99999999999999999999999"}) {
    INFO(bad);
    CHECK_FALSE(ParseNetClassId(bad).ok());
  }
}

TEST_CASE("ResolveNetClassId", "[net_class]") {
  PolicyConfig config;
  config.qos_class_ids = {{kSharedCores, 20}};
  CHECK(*ResolveNetClassId(config, {}, kSharedCores) == 20);
  CHECK(*ResolveNetClassId(config, {{kDefaultNetClassAnnotationKey, "100"}}, kSharedCores) == 100);
  // The pod annotation wins even for a level without a configured id.
  CHECK(*ResolveNetClassId(config, {{kDefaultNetClassAnnotationKey, "5"}}, kSystemCores) == 5);
  auto missing = ResolveNetClassId(config, {}, kSystemCores);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(),
             Catch::Contains("net class id for QoS level system_cores is not configured"));
  config.pod_net_class_annotation_key = "example.com/classid";
  CHECK(*ResolveNetClassId(config, {{kDefaultNetClassAnnotationKey, "100"}}, kSharedCores) == 20);
  CHECK(*ResolveNetClassId(config, {{"example.com/classid", "9"}}, kSharedCores) == 9);
}

}  // namespace
}  // namespace netqos::core
