// The capability check of --enforcement=bpf: each missing capability named with its reason,
// CAP_SYS_ADMIN standing in for CAP_BPF, and CAP_SYS_ADMIN needed only for named namespaces.
#include "app/capability_check.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace netqos::app {
namespace {

constexpr std::uint64_t Bit(int n) { return std::uint64_t{1} << n; }
constexpr std::uint64_t kNetAdmin = Bit(12), kSysAdmin = Bit(21), kBpf = Bit(39);

TEST_CASE("capability check: enforcement needs CAP_BPF and CAP_NET_ADMIN, each named") {
  const auto needs = CapabilitiesNeeded(true, false);
  CHECK(CheckCapabilities(needs, kBpf | kNetAdmin).ok());
  auto no_net_admin = CheckCapabilities(needs, kBpf);
  REQUIRE_FALSE(no_net_admin.ok());
  CHECK(no_net_admin.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(no_net_admin.message(), Catch::Contains("CAP_NET_ADMIN (attach the networking"));
  CHECK_THAT(no_net_admin.message(), !Catch::Contains("CAP_BPF"));
  auto none = CheckCapabilities(needs, 0);
  CHECK_THAT(none.message(), Catch::Contains("CAP_BPF (bpf()") && Catch::Contains("CAP_NET_ADMIN"));
}

TEST_CASE("capability check: CAP_SYS_ADMIN stands in for CAP_BPF, not for CAP_NET_ADMIN") {
  const auto needs = CapabilitiesNeeded(true, false);
  CHECK(CheckCapabilities(needs, kSysAdmin | kNetAdmin).ok());
  CHECK_THAT(CheckCapabilities(needs, kSysAdmin).message(), Catch::Contains("CAP_NET_ADMIN"));
}

TEST_CASE("capability check: named network namespaces need CAP_SYS_ADMIN") {
  CHECK_THAT(CheckCapabilities(CapabilitiesNeeded(true, true), kBpf | kNetAdmin).message(),
             Catch::Contains("CAP_SYS_ADMIN (setns()"));
  CHECK(CheckCapabilities(CapabilitiesNeeded(true, true), kBpf | kNetAdmin | kSysAdmin).ok());
  CHECK(CheckCapabilities(CapabilitiesNeeded(false, false), 0).ok());
}

}  // namespace
}  // namespace netqos::app
