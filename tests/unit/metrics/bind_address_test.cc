// --metrics-bind-address's grammar: what it takes, what it refuses, and that a refusal names the
// flag and the value as given.
#include "metrics/bind_address.h"

#include <catch2/catch.hpp>
#include <string>

using netqos::metrics::BindAddress;
using netqos::metrics::ParseBindAddress;

TEST_CASE("metrics bind addresses: host port, bracketed IPv6, any address") {
  auto a = ParseBindAddress("127.0.0.1:9465");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 9465);
  CHECK(a->Text() == "127.0.0.1:9465");
  auto b = ParseBindAddress("[::1]:9465");
  REQUIRE(b.ok());
  CHECK(b->host == "::1");
  CHECK(b->Text() == "[::1]:9465");
  auto c = ParseBindAddress(":9465");
  REQUIRE(c.ok());
  CHECK(c->host == "0.0.0.0");
  CHECK(*c == BindAddress{"0.0.0.0", 9465});
  auto d = ParseBindAddress("localhost:0");
  REQUIRE(d.ok());
  CHECK(d->host == "localhost");
  CHECK(d->port == 0);
  auto top = ParseBindAddress("[::]:65535");
  REQUIRE(top.ok());
  CHECK(*top == BindAddress{"::", 65535});
}

TEST_CASE("metrics bind addresses: a refused one is named with the flag and the reason") {
  struct Case {
    const char* address;
    const char* why;
  };
  for (const auto& c : {Case{"", "no port"}, Case{"9465", "no port"}, Case{"127.0.0.1", "no port"},
                        Case{"127.0.0.1:", "bad port"}, Case{"127.0.0.1:65536", "above 65535"},
                        Case{"127.0.0.1:http", "bad port"}, Case{"::1:9465", "needs brackets"},
                        Case{"[::1]9465", "no port"}, Case{"[nothost]:1", "not an IPv6"},
                        Case{"bad host:1", "not an IPv4 address or host name"},
                        Case{"127.0.0.1:-1", "bad port"}, Case{"[::1", "unclosed"}}) {
    INFO(c.address);
    auto r = ParseBindAddress(c.address);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(),
               Catch::StartsWith("--metrics-bind-address \"" + std::string(c.address) + "\": ") &&
                   Catch::Contains(c.why));
  }
}
