#include "app/kernel_features.h"

#include <catch2/catch.hpp>

using netqos::app::IfbTakesBpfRedirects;
using netqos::app::KernelVersion;
using netqos::app::ParseKernelRelease;

TEST_CASE("kernel releases parse to major.minor") {
  auto v = ParseKernelRelease("6.1.0-27-amd64");
  REQUIRE(v);
  CHECK(v->major == 6);
  CHECK(v->minor == 1);
  v = ParseKernelRelease("6.18.44-fc-v1045");
  REQUIRE(v);
  CHECK(v->minor == 18);
  CHECK(ParseKernelRelease("5.10.0-46-cloud-amd64")->major == 5);
  CHECK_FALSE(ParseKernelRelease(""));
  CHECK_FALSE(ParseKernelRelease("6"));
  CHECK_FALSE(ParseKernelRelease("6.x"));
  CHECK_FALSE(ParseKernelRelease("linux-6.1"));
}

TEST_CASE("the IFB path is used only on kernels the lab proved") {
  CHECK_FALSE(IfbTakesBpfRedirects({5, 10}));
  CHECK_FALSE(IfbTakesBpfRedirects({6, 1}));
  CHECK_FALSE(IfbTakesBpfRedirects({6, 11}));  // unproven
  CHECK(IfbTakesBpfRedirects({6, 12}));
  CHECK(IfbTakesBpfRedirects({6, 18}));
  CHECK(IfbTakesBpfRedirects({7, 0}));
}
