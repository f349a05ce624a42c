// The duration flags: Go durations and the plain seconds they took before, the bounds, and
// errors that name the flag and the value.
#include "app/duration_flag.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

using netqos::app::DurationFlagText;
using netqos::app::ParseDurationFlag;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

namespace {

const char kFlag[] = "--enforcement-resync-period";

milliseconds Ok(const std::string& text) {
  INFO(text);
  auto d = ParseDurationFlag(kFlag, text);
  INFO(d.status().message());
  REQUIRE(d.ok());
  return *d;
}

std::string Error(const std::string& text) {
  INFO(text);
  auto d = ParseDurationFlag(kFlag, text);
  REQUIRE_FALSE(d.ok());
  // Every error names the flag and the value as given.
  CHECK_THAT(d.status().message(), Catch::StartsWith(std::string(kFlag) + "=\"" + text + "\": "));
  return d.status().message();
}

}  // namespace

TEST_CASE("duration flag: Go durations") {
  CHECK(Ok("30s") == seconds(30));
  CHECK(Ok("1m") == minutes(1));
  CHECK(Ok("1m30s") == seconds(90));
  CHECK(Ok("2h45m") == hours(2) + minutes(45));
  CHECK(Ok("1.5h") == minutes(90));
  CHECK(Ok("1500ms") == milliseconds(1500));
  CHECK(Ok("2.25s") == milliseconds(2250));
  CHECK(Ok("1000000us") == seconds(1));
  CHECK(Ok("+5s") == seconds(5));
}

TEST_CASE("duration flag: a plain number is seconds, as these flags took before") {
  CHECK(Ok("30") == seconds(30));
  CHECK(Ok("1") == seconds(1));
  CHECK(Ok("007") == seconds(7));
  CHECK(Ok("+60") == seconds(60));
  CHECK(Ok("2147483647") == seconds(2147483647));  // the largest whole seconds of before
}

TEST_CASE("duration flag: negative, zero, too short, too long and too fine are refused") {
  CHECK_THAT(Error("-5s"), Catch::Contains("must not be negative"));
  CHECK_THAT(Error("-5"), Catch::Contains("must not be negative"));
  CHECK_THAT(Error("-1ns"), Catch::Contains("must not be negative"));
  CHECK_THAT(Error("0"), Catch::Contains("too short (from 1s to 2147483647s)"));
  CHECK_THAT(Error("0s"), Catch::Contains("too short"));
  CHECK_THAT(Error("-0"), Catch::Contains("too short"));
  CHECK_THAT(Error("999ms"), Catch::Contains("too short"));
  CHECK_THAT(Error("2147483648"), Catch::Contains("too long"));
  CHECK_THAT(Error("99999999999999999999999"), Catch::Contains("too long"));
  CHECK_THAT(Error("596524h"), Catch::Contains("too long"));
  CHECK_THAT(Error("2562047h"), Catch::Contains("too long"));  // int64 ns, but over the bound
  CHECK_THAT(Error("1.0005s"), Catch::Contains("finer than a millisecond"));
  CHECK_THAT(Error("1000001us"), Catch::Contains("finer than a millisecond"));
}

TEST_CASE("duration flag: what is not a duration says why and what would be") {
  for (const char* bad :
       {"", "soon", "5x", "1.5", "5 s", "3d", "1e3", "0x10", "--5s", "9999999999999999999999h"}) {
    const std::string message = Error(bad);
    CHECK_THAT(message, Catch::Contains("duration") && Catch::Contains("30s, 1m30s or 1.5h"));
  }
  CHECK_THAT(Error("5x"), Catch::Contains("unknown unit \"x\""));
  CHECK_THAT(Error("1.5"), Catch::Contains("missing unit"));
}

TEST_CASE("duration flag: the text of a default reads back to the same value") {
  CHECK(DurationFlagText(seconds(30)) == "30s");
  // Go's time.Duration.String().
  CHECK(DurationFlagText(minutes(1)) == "1m0s");
  CHECK(DurationFlagText(seconds(90)) == "1m30s");
  CHECK(DurationFlagText(milliseconds(1500)) == "1.5s");
  CHECK(DurationFlagText(milliseconds(61050)) == "1m1.05s");
  CHECK(DurationFlagText(milliseconds(500)) == "500ms");
  CHECK(DurationFlagText(milliseconds(0)) == "0s");
  CHECK(DurationFlagText(seconds(3600)) == "1h0m0s");
  CHECK(DurationFlagText(seconds(2147483647)) == "596523h14m7s");
  for (milliseconds d : {milliseconds(1000), milliseconds(1500), milliseconds(3600000),
                         milliseconds(61050), milliseconds(seconds(2147483647))})
    CHECK(Ok(DurationFlagText(d)) == d);
}
