// ParseGoDuration against Go's time.ParseDuration: the cases of Go's own format_test.go
// (parseDurationTests) that matter to a flag, and the errors with what they name.
#include "common/go_duration.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>

using netqos::ParseGoDuration;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

namespace {

nanoseconds Ok(const std::string& text) {
  INFO(text);
  auto d = ParseGoDuration(text);
  INFO(d.status().message());
  REQUIRE(d.ok());
  return *d;
}

std::string Error(const std::string& text) {
  INFO(text);
  auto d = ParseGoDuration(text);
  REQUIRE_FALSE(d.ok());
  return d.status().message();
}

}  // namespace

TEST_CASE("go duration: every unit, alone and combined", "[common]") {
  CHECK(Ok("0") == nanoseconds(0));
  CHECK(Ok("5s") == seconds(5));
  CHECK(Ok("30s") == seconds(30));
  CHECK(Ok("1478s") == seconds(1478));
  CHECK(Ok("10ns") == nanoseconds(10));
  CHECK(Ok("11us") == microseconds(11));
  CHECK(Ok("12\xc2\xb5s") == microseconds(12));  // U+00B5 micro sign
  CHECK(Ok("12\xce\xbcs") == microseconds(12));  // U+03BC Greek mu
  CHECK(Ok("13ms") == milliseconds(13));
  CHECK(Ok("14s") == seconds(14));
  CHECK(Ok("15m") == minutes(15));
  CHECK(Ok("16h") == hours(16));
  CHECK(Ok("3h30m") == hours(3) + minutes(30));
  CHECK(Ok("2h45m") == hours(2) + minutes(45));
  CHECK(Ok("1m30s") == seconds(90));
  CHECK(Ok("10.5s4m") == minutes(4) + milliseconds(10500));
  CHECK(Ok("-2m3.4s") == -(minutes(2) + milliseconds(3400)));
  CHECK(Ok("1h2m3s4ms5us6ns") ==
        hours(1) + minutes(2) + seconds(3) + milliseconds(4) + microseconds(5) + nanoseconds(6));
  CHECK(Ok("39h9m14.425s") == hours(39) + minutes(9) + milliseconds(14425));
  CHECK(Ok("0s") == nanoseconds(0));
  CHECK(Ok("0h0m0s") == nanoseconds(0));
}

TEST_CASE("go duration: signs, as Go takes them", "[common]") {
  CHECK(Ok("-5s") == seconds(-5));
  CHECK(Ok("+5s") == seconds(5));
  CHECK(Ok("-0") == nanoseconds(0));
  CHECK(Ok("+0") == nanoseconds(0));
  CHECK(Ok("-0s") == nanoseconds(0));
}

TEST_CASE("go duration: fractions, exact to the nanosecond", "[common]") {
  CHECK(Ok("5.6s") == milliseconds(5600));
  CHECK(Ok("5.s") == seconds(5));
  CHECK(Ok(".5s") == milliseconds(500));
  CHECK(Ok("1.0s") == seconds(1));
  CHECK(Ok("1.00s") == seconds(1));
  CHECK(Ok("1.004s") == milliseconds(1004));
  CHECK(Ok("1.0040s") == milliseconds(1004));
  CHECK(Ok("100.00100s") == milliseconds(100001));
  CHECK(Ok("1.5h") == minutes(90));
  CHECK(Ok("0.3333333333333333333h") == minutes(20));  // digits past uint64 stop counting
  CHECK(Ok("1.5ns") == nanoseconds(1));                // below a nanosecond: dropped
  CHECK(Ok("0.1ns") == nanoseconds(0));
}

TEST_CASE("go duration: the int64 nanosecond limits", "[common]") {
  CHECK(Ok("9223372036854775807ns") == nanoseconds(INT64_MAX));
  CHECK(Ok("-9223372036854775808ns") == nanoseconds(INT64_MIN));
  CHECK(Ok("2562047h") == hours(2562047));
  CHECK(Ok("9223372036s854ms775us807ns") == nanoseconds(INT64_MAX));
  CHECK(Ok("0.100000000000000000000h") == minutes(6));
  for (const char* over : {"9223372036854775808ns", "-9223372036854775809ns", "2562048h",
                           "9223372036854775807ns1ns", "9223372036854775808ns9223372036854775808ns",
                           "99999999999999999999s", "3000000h", "9223372036s854ms775us808ns"}) {
    CHECK_THAT(Error(over), Catch::Contains("invalid duration") && Catch::Contains(over));
  }
}

TEST_CASE("go duration: garbage, empty and missing units are refused, quoting the text",
          "[common]") {
  for (const char* bad : {"", "-", "+", "s", ".", "-.", ".s", "+.s", "3.4.5s", "1s.", "--5s",
                          "5 s ", " 5s", "1e3s", "0x10s", "+-5s"}) {
    const std::string message = Error(bad);
    CHECK_THAT(message, Catch::Contains("duration \"" + std::string(bad) + "\""));
  }
  CHECK(Error("3") == "missing unit in duration \"3\"");
  CHECK(Error("-5") == "missing unit in duration \"-5\"");
  CHECK(Error("1.5") == "missing unit in duration \"1.5\"");
  CHECK(Error("1s2") == "missing unit in duration \"1s2\"");
  CHECK_THAT(Error("3d"), Catch::StartsWith("unknown unit \"d\" in duration \"3d\""));
  CHECK_THAT(Error("5 s"), Catch::StartsWith("unknown unit \" s\" in duration \"5 s\""));
  CHECK_THAT(Error("1S"), Catch::StartsWith("unknown unit \"S\""));
  CHECK_THAT(Error("2sec"), Catch::StartsWith("unknown unit \"sec\""));
  CHECK_THAT(Error("1m1x"), Catch::StartsWith("unknown unit \"x\""));
}
