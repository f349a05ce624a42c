// IP printing must match Go's net.IP.String() byte for byte (allocation annotations).
#include "core/ip_format.h"

#include <catch2/catch.hpp>

namespace netqos::core {
namespace {

TEST_CASE("NormalizeIp prints like Go", "[ip_format]") {
  struct Case {
    const char* in;
    const char* out;
  };
  for (const Case& c : std::vector<Case>{
           {"1.1.1.1", "1.1.1.1"},
           {"255.255.255.255", "255.255.255.255"},
           {"0.0.0.0", "0.0.0.0"},
           {"::ffff:192.0.2.1", "192.0.2.1"},
           {"::FFFF:c000:0201", "192.0.2.1"},
           {"::ffff:0:0", "0.0.0.0"},
           {"::", "::"},
           {"::1", "::1"},
           {"1::", "1::"},
           {"2001:DB8::1", "2001:db8::1"},
           {"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
           {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},     // first run on ties
           {"2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"},       // longest run wins
           {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"},  // single zero not compressed
           {"fe80::1:2:3:4", "fe80::1:2:3:4"},
           {"::1.2.3.4", "::102:304"},  // IPv4-compatible: hex, as Go
           {"64:ff9b::192.0.2.33", "64:ff9b::c000:221"},
           {"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"},
           {"1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"},
           {"0:0:0:0:0:0:0:0", "::"},
           {"1:0:0:0:0:0:0:0", "1::"},
       }) {
    INFO(c.in);
    auto r = NormalizeIp(c.in);
    REQUIRE(r.ok());
    CHECK(*r == c.out);
  }
}

TEST_CASE("ParseIp rejects what Go rejects", "[ip_format]") {
  for (const char* bad : {"",
                          "1.1.1",
                          "1.1.1.1.1",
                          "256.1.1.1",
                          "01.1.1.1",
                          "1.1.1.01",
                          "1.1.1.1 ",
                          " 1.1.1.1",
                          "a.b.c.d",
                          ":",
                          ":::",
                          "1:::2",
                          "1::2::3",
                          "12345::",
                          "1:2:3:4:5:6:7:8:9",
                          "1:2:3:4:5:6:7",
                          "1:2:3:4:5:6:7::8",
                          ":1::",
                          "1::2:",
                          "fe80::1%eth0",
                          "::1.2.3",
                          "1.2.3.4::",
                          "g::1",
                          "1:2:3:4:5:6:7:1.2.3.4"}) {
    INFO(bad);
    auto r = ParseIp(bad);
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace netqos::core
