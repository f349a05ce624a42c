// The kubernetes.io/{egress,ingress}-bandwidth annotations: Kubernetes quantities in bit/s.
#include "core/bandwidth_quantity.h"

#include <catch2/catch.hpp>
#include <string>

namespace netqos::core {
namespace {

uint64_t Bps(std::string_view text) {
  auto v = ParseBandwidthQuantity(text);
  INFO(std::string(text) << ": " << (v.ok() ? "" : v.status().message()));
  REQUIRE(v.ok());
  return *v;
}

std::string ErrorOf(std::string_view text) {
  auto v = ParseBandwidthQuantity(text);
  INFO(std::string(text));
  REQUIRE_FALSE(v.ok());
  return v.status().message();
}

TEST_CASE("bandwidth quantity: decimal and binary suffixes scale the number", "[quantity]") {
  CHECK(Bps("10M") == 10'000'000);
  CHECK(Bps("1G") == 1'000'000'000);
  CHECK(Bps("1k") == 1'000);
  CHECK(Bps("1T") == 1'000'000'000'000);
  CHECK(Bps("1P") == 1'000'000'000'000'000);
  CHECK(Bps("1Ki") == 1'024);
  CHECK(Bps("500Ki") == 512'000);
  CHECK(Bps("1Mi") == 1'048'576);
  CHECK(Bps("1Gi") == 1'073'741'824);
  CHECK(Bps("1Ti") == 1'099'511'627'776);
  CHECK(Bps("1000000000m") == 1'000'000);
  CHECK(Bps("1000000000000u") == 1'000'000);
  CHECK(Bps("1000000000000000n") == 1'000'000);
  CHECK(Bps("20000000") == 20'000'000);
  CHECK(Bps("+20M") == 20'000'000);
  CHECK(Bps("0020M") == 20'000'000);
}

TEST_CASE("bandwidth quantity: fractions and exponents are exact and round up", "[quantity]") {
  CHECK(Bps("1.5M") == 1'500'000);
  CHECK(Bps(".5M") == 500'000);
  CHECK(Bps("5.M") == 5'000'000);
  CHECK(Bps("1.5Ki") == 1'536);
  CHECK(Bps("0.001Mi") == 1'049);  // 1048.576 rounds up, as Quantity.Value() does
  CHECK(Bps("1e6") == 1'000'000);
  CHECK(Bps("1E6") == 1'000'000);
  CHECK(Bps("1e+6") == 1'000'000);
  CHECK(Bps("1000000e-3") == 1'000);
  CHECK(Bps("2.5e3") == 2'500);
  // Beyond double precision: a floating-point parse would lose the last digit.
  CHECK(Bps("999999999999999.0000000000000000000000001") == 1'000'000'000'000'000);
  CHECK(Bps("123456789012345") == 123'456'789'012'345);
  CHECK(Bps("1000.000000000000000000000000000000000000000000000000001") == 1'001);
  CHECK(Bps("1000.000000000000000000000000000000000000000000000000000") == 1'000);
}

TEST_CASE("bandwidth quantity: the kubelet's bounds, 1k to 1P, are kept", "[quantity]") {
  CHECK(ErrorOf("999").find("below the kubelet's minimum of 1k") != std::string::npos);
  CHECK(ErrorOf("0.999k").find("below") != std::string::npos);
  CHECK(ErrorOf("0").find("below") != std::string::npos);
  CHECK(ErrorOf("1n").find("below") != std::string::npos);
  CHECK(ErrorOf("1e-999").find("below") != std::string::npos);
  CHECK(ErrorOf("1000000000000000.1").find("above the kubelet's maximum of 1P") !=
        std::string::npos);
  CHECK(ErrorOf("1Pi").find("above") != std::string::npos);
  CHECK(ErrorOf("2P").find("above") != std::string::npos);
  CHECK(ErrorOf("1E").find("above") != std::string::npos);
  CHECK(ErrorOf("1Ei").find("above") != std::string::npos);
  CHECK(ErrorOf("1e999999999").find("above") != std::string::npos);
  CHECK(ErrorOf("99999999999999999999999999").find("above") != std::string::npos);
  CHECK(ErrorOf("-10M") == "negative");
}

TEST_CASE("bandwidth quantity: what is not Kubernetes' grammar is refused", "[quantity]") {
  for (const char* bad : {"10Mbps", "10mbit", "10 M",  " 10M",  "10M ",  "1K",
                          "1KB",    "M",      "Ki",    ".",     "1..5M", "1.5.3",
                          "0x10",   "1e",     "1e+",   "1e1.5", "1e--1", "1e99999999999999999999",
                          "--1",    "+-1",    "1,000", "١٠M",   "10M\n"}) {
    CHECK(ErrorOf(bad).find("not a Kubernetes quantity") != std::string::npos);
  }
  CHECK(ErrorOf("") == "empty");
  CHECK(ErrorOf(std::string(kMaxQuantityLength + 1, '1')).find("longer than 64") !=
        std::string::npos);
  CHECK(Bps(std::string(kMaxQuantityLength - 2, '0') + "1k") == 1'000);
}

TEST_CASE("bandwidth annotations: each direction is read on its own, errors name the annotation",
          "[quantity]") {
  auto both = ReadBandwidthAnnotations(
      {{kEgressBandwidthAnnotation, "20M"}, {kIngressBandwidthAnnotation, "40M"}});
  CHECK(both.egress_bps == 20'000'000u);
  CHECK(both.ingress_bps == 40'000'000u);
  CHECK(both.errors.empty());

  auto none = ReadBandwidthAnnotations({{"kubernetes.io/bandwidth", "1G"}});
  CHECK_FALSE(none.egress_bps);
  CHECK_FALSE(none.ingress_bps);
  CHECK(none.errors.empty());

  auto bad = ReadBandwidthAnnotations(
      {{kEgressBandwidthAnnotation, "20 M\" pod=x"}, {kIngressBandwidthAnnotation, "40M"}});
  CHECK_FALSE(bad.egress_bps);
  CHECK(bad.ingress_bps == 40'000'000u);
  REQUIRE(bad.errors.size() == 1);
  // Named, and quoted so that the value cannot forge a field of the log line.
  CHECK(bad.errors[0] ==
        "annotation kubernetes.io/egress-bandwidth=\"20 M\\\" pod=x\": not a Kubernetes "
        "quantity (a number with an optional suffix such as k, M, G, Ki, Mi, Gi or e6)");

  auto huge = ReadBandwidthAnnotations({{kIngressBandwidthAnnotation, std::string(100000, '9')}});
  REQUIRE(huge.errors.size() == 1);
  CHECK(huge.errors[0] ==
        "annotation kubernetes.io/ingress-bandwidth=(100000 characters): longer than 64 "
        "characters");
}

}  // namespace
}  // namespace netqos::core
