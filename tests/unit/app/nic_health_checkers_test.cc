#include "app/nic_health_checkers.h"

#include <catch2/catch.hpp>

#include "app/daemon_config.h"

namespace netqos::app {
namespace {

bool Ip(const std::vector<std::string>& list) {
  auto r = ParseNicHealthCheckers(list);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return r->ip;
}

TEST_CASE("NIC health checkers are read as Katalyst HEAD reads them", "[nic_health_checkers]") {
  CHECK(Ip({"*"}));
  CHECK(Ip({"ip"}));
  CHECK_FALSE(Ip({"-ip"}));
  CHECK_FALSE(Ip({"*", "-ip"}));
  CHECK(Ip({"-ip", "ip"}));  // naming it wins over turning it off
  CHECK_FALSE(Ip({}));       // no checker named: none runs
  auto bad = ParseNicHealthCheckers({"*", "link"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("unknown checker \"link\""));
}

TEST_CASE("the NIC health checkers flag reaches the policy", "[nic_health_checkers]") {
  const char* on[] = {"netqosd", "--topology-file=/dev/null"};
  auto a = ParseDaemonFlags(2, on);
  REQUIRE(a.config.has_value());
  CHECK(a.config->policy.require_ip_address);
  const char* off[] = {"netqosd", "--topology-file=/dev/null",
                       "--network-resource-plugin-nic-health-checkers=-ip"};
  auto b = ParseDaemonFlags(3, off);
  REQUIRE(b.config.has_value());
  CHECK_FALSE(b.config->policy.require_ip_address);
  const char* bad[] = {"netqosd", "--topology-file=/dev/null",
                       "--network-resource-plugin-nic-health-checkers=iP"};
  auto c = ParseDaemonFlags(3, bad);
  CHECK_FALSE(c.config.has_value());
  CHECK(c.exit_code == 2);
}

}  // namespace
}  // namespace netqos::app
