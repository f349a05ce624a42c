// Linux list format for NUMA sets, as Go's CPUSet prints and parses it.
#include "core/numa_set.h"

#include <catch2/catch.hpp>

namespace netqos::core {
namespace {

TEST_CASE("FormatNumaList", "[numa_set]") {
  CHECK(FormatNumaList({}) == "");
  CHECK(FormatNumaList({0}) == "0");
  CHECK(FormatNumaList({0, 1}) == "0-1");
  CHECK(FormatNumaList({2, 3}) == "2-3");
  CHECK(FormatNumaList({0, 2}) == "0,2");
  CHECK(FormatNumaList({0, 1, 3}) == "0-1,3");
  CHECK(FormatNumaList({0, 1, 2, 3, 5, 7, 8, 9}) == "0-3,5,7-9");
}

TEST_CASE("ParseNumaList", "[numa_set]") {
  CHECK(*ParseNumaList("") == NumaSet{});
  CHECK(*ParseNumaList("0") == NumaSet{0});
  CHECK(*ParseNumaList("0-1,3") == NumaSet{0, 1, 3});
  CHECK(*ParseNumaList("3,1,1-2") == NumaSet{1, 2, 3});
  CHECK(*ParseNumaList("5-5") == NumaSet{5});
  for (const char* bad :
       {",", "0,", ",0", "1-", "-1", "2-1", "a", "0 1", " 0", "0-1-2", "99999999999", "nil"}) {
    INFO(bad);
    CHECK_FALSE(ParseNumaList(bad).ok());
  }
}

TEST_CASE("NUMA list round trip", "[numa_set]") {
  for (const NumaSet& s : std::vector<NumaSet>{{}, {0}, {0, 1}, {1, 3, 4, 5}, {0, 2, 4, 6}}) {
    auto parsed = ParseNumaList(FormatNumaList(s));
    REQUIRE(parsed.ok());
    CHECK(*parsed == s);
  }
}

}  // namespace
}  // namespace netqos::core
