// --enforce-nics parsing: [netns/]name items or "all", with rejections naming the flag and item.
#include "app/enforce_nics.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using netqos::StatusCode;
using netqos::app::ParseEnforceNics;
using netqos::core::NicId;

TEST_CASE("ParseEnforceNics: empty list shapes nothing") {
  auto r = ParseEnforceNics({});
  REQUIRE(r.ok());
  CHECK(r->empty());
  CHECK_FALSE(r->all);
  CHECK_FALSE(r->Contains(NicId{"", "eth0"}));
}

TEST_CASE("ParseEnforceNics: host and namespace NICs") {
  auto r = ParseEnforceNics({"eth0", "ns2/eth2", "ns3/eth0", "abcdefghijklmno"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->empty());
  CHECK_FALSE(r->all);
  CHECK(r->nics == std::vector<NicId>{
                       {"", "eth0"}, {"ns2", "eth2"}, {"ns3", "eth0"}, {"", "abcdefghijklmno"}});
  CHECK(r->Contains(NicId{"", "eth0"}));
  CHECK(r->Contains(NicId{"ns2", "eth2"}));
  CHECK(r->Contains(NicId{"ns3", "eth0"}));
  CHECK_FALSE(r->Contains(NicId{"ns2", "eth0"}));  // same name, other namespace
  CHECK_FALSE(r->Contains(NicId{"", "eth2"}));
}

TEST_CASE("ParseEnforceNics: all") {
  auto r = ParseEnforceNics({"all"});
  REQUIRE(r.ok());
  CHECK(r->all);
  CHECK_FALSE(r->empty());
  CHECK(r->nics.empty());
  CHECK(r->Contains(NicId{"", "eth0"}));
  CHECK(r->Contains(NicId{"any", "thing"}));
  // In a namespace, "all" is just an interface name.
  auto named = ParseEnforceNics({"ns/all"});
  REQUIRE(named.ok());
  CHECK_FALSE(named->all);
  CHECK(named->Contains(NicId{"ns", "all"}));
}

TEST_CASE("ParseEnforceNics: rejections name the flag and the item") {
  struct Case {
    std::vector<std::string> items;
    std::string bad;  // the item the message must quote
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {{""}, "\"\"", "empty"},
           {{"eth0", ""}, "\"\"", "empty"},
           {{"ns/"}, "ns/", "empty"},
           {{"/eth0"}, "/eth0", "namespace"},
           {{"abcdefghijklmnop"}, "abcdefghijklmnop", "15"},
           {{"ns/abcdefghijklmnop"}, "ns/abcdefghijklmnop", "15"},
           {{"all", "eth0"}, "all", "combined"},
           {{"eth0", "all"}, "all", "combined"},
           {{"all", "all"}, "all", "twice"},
           {{"a/b/eth0"}, "a/b/eth0", "more than one '/'"},
           {{"eth0", "eth1", "eth0"}, "eth0", "twice"},
           {{"ns/eth0", "ns/eth0"}, "ns/eth0", "twice"},
           {{"eth0:1"}, "eth0:1", "':'"},
           {{"eth 0"}, "eth 0", "whitespace"},
           {{".."}, "..", "not an interface name"},
       }) {
    INFO(c.bad);
    auto r = ParseEnforceNics(c.items);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::StartsWith("--enforce-nics: "));
    CHECK_THAT(r.status().message(), Catch::Contains(c.bad));
    CHECK_THAT(r.status().message(), Catch::Contains(c.why));
  }
}

TEST_CASE("EnforceNics::Items gives the flag's items back, for the logs") {
  for (const auto& items : std::vector<std::vector<std::string>>{
           {}, {"all"}, {"eth0"}, {"ns2/eth2", "eth0", "ns/all"}}) {
    auto r = ParseEnforceNics(items);
    REQUIRE(r.ok());
    CHECK(r->Items() == items);
  }
}

}  // namespace
