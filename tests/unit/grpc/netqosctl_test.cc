// The netqosctl binary (built next to this test) against a served stack: exit codes, the nil vs
// empty wording, error format, JSON. Skipped with a warning if netqosctl was not built.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/constants.h"
#include "support/process.h"
#include "unit/grpc/service_fixture.h"

namespace netqos::grpcadapter {
namespace {

std::string CtlPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto ctl = self.parent_path() / "netqosctl";
  return std::filesystem::exists(ctl) ? ctl.string() : "";
}

class Ctl {
 public:
  Ctl(std::string binary, std::string socket, std::string scratch)
      : binary_(std::move(binary)), socket_(std::move(socket)), out_(scratch + "/ctl.out") {}
  netqos::testing::CommandResult operator()(std::vector<std::string> args) const {
    args.insert(args.begin(), {binary_, "--socket", socket_});
    return netqos::testing::RunCommand(args, out_);
  }

 private:
  std::string binary_;
  std::string socket_;
  std::string out_;
};

}  // namespace

TEST_CASE("netqosctl against a served stack", "[grpc][ctl]") {
  const std::string binary = CtlPath();
  // The build makes netqosctl a dependency of this test binary, so a missing one is a failure.
  REQUIRE_FALSE(binary.empty());
  netqos::testing::ServedStack stack;
  netqos::testing::TempDir scratch;
  Ctl ctl(binary, stack.socket(), scratch.path());

  SECTION("plugin-info and options") {
    auto r = ctl({"plugin-info", "--json"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["type"] == "ResourcePlugin");
    CHECK(j["name"] == core::kResourceName);
    CHECK(j["supported_versions"] == nlohmann::json::array({"v1alpha1"}));
    r = ctl({"options"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("with_topology_alignment: true"));
  }

  SECTION("hints: nil and empty are told apart") {
    auto r = ctl({"hints", "--pod-uid", "u1", "--container", "init", "--container-type", "init",
                  "--mbps", "10"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("no topology preference (nil)"));
    r = ctl(
        {"hints", "--json", "--pod-uid", "u1", "--container", "init", "--container-type", "INIT"});
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.output)["resource_hints"][core::kResourceName].is_null());

    const std::string restricted =
        std::string(core::kNetworkEnhancementKey) + R"(={"topology_affinity_restricted":"true"})";
    r = ctl({"hints", "--pod-uid", "u1", "--container", "main", "--mbps", "1000000", "--annotation",
             restricted});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("no NIC can satisfy the request (empty)"));
    r = ctl({"hints", "--json", "--pod-uid", "u1", "--container", "main", "--mbps", "1000000",
             "--annotation", restricted});
    auto hints = nlohmann::json::parse(r.output)["resource_hints"][core::kResourceName];
    CHECK(hints.is_array());
    CHECK(hints.empty());
  }

  SECTION("allocate, allocations, topology-aware, remove") {
    auto r = ctl({"allocate", "--pod-uid", "u2", "--pod-name", "web", "--container", "main",
                  "--mbps", "1000", "--qos", "shared_cores", "--hint", "0-1", "--preferred"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("1000 Mbps"));
    CHECK_THAT(r.output, Catch::Contains("eth0"));

    r = ctl({"allocations", "--json"});
    REQUIRE(r.exit_code == 0);
    auto list = nlohmann::json::parse(r.output)["allocations"];
    REQUIRE(list.size() == 1);
    CHECK(list[0]["pod_uid"] == "u2");
    CHECK(list[0]["pod_namespace"] == "default");
    CHECK(list[0]["qos_level"] == "shared_cores");
    CHECK(list[0]["egress_mbps"] == 1000);

    r = ctl({"allocations"});
    CHECK_THAT(r.output, Catch::StartsWith("POD "));
    CHECK_THAT(r.output, Catch::Contains("default/web"));

    r = ctl({"topology-aware", "--pod-uid", "u2", "--container", "main", "--json"});
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.output)["container_name"] == "main");

    r = ctl({"capacity"});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("ns2-eth2"));
    r = ctl({"capacity", "--json"});
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.output)["nics"].size() == 2);

    r = ctl({"remove", "--pod-uid", "u2"});
    CHECK(r.exit_code == 0);
    r = ctl({"allocations", "--json"});
    CHECK(nlohmann::json::parse(r.output)["allocations"].empty());
  }

  SECTION("pod-level allocate") {
    auto r = ctl({"allocate", "--pod", "--pod-uid", "u5", "--mbps", "300", "--json"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(
              r.output)["allocation_result"][core::kResourceName]["allocated_quantity"] == 300.0);
  }

  SECTION("notify-registered reaches the registration service") {
    auto r = ctl({"notify-registered", "--error", "version mismatch"});
    REQUIRE(r.exit_code == 0);
    auto state = stack.registration().state();
    CHECK(state.notified);
    CHECK_FALSE(state.registered);
    CHECK(state.error == "version mismatch");
    REQUIRE(ctl({"notify-registered"}).exit_code == 0);
    CHECK(stack.registration().state().registered);
  }

  SECTION("exit codes") {
    auto r = ctl({"allocate", "--pod-uid", "big", "--container", "main", "--mbps", "1000000"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::StartsWith("netqosctl: Allocate: RESOURCE_EXHAUSTED: "));

    CHECK(ctl({"allocate", "--container", "main"}).exit_code == 2);  // --pod-uid missing
    CHECK(ctl({"allocate", "--pod-uid", "x"}).exit_code == 2);       // --container missing
    CHECK(
        ctl({"hints", "--pod-uid", "x", "--container", "c", "--annotation", "novalue"}).exit_code ==
        2);
    CHECK(ctl({"hints", "--pod-uid", "x", "--container", "c", "--container-type", "BOGUS"})
              .exit_code == 2);
    CHECK(ctl({"no-such-command"}).exit_code == 2);
    CHECK(ctl({"--help"}).exit_code == 0);

    auto missing = netqos::testing::RunCommand(
        {binary, "--socket", scratch.path() + "/none.sock", "allocations"},
        scratch.path() + "/ctl.out");
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.output,
               Catch::Contains("netqosctl: daemon socket not found at " + scratch.path() +
                               "/none.sock: is netqosd running? (use --socket to point "
                               "elsewhere)"));
  }
}

}  // namespace netqos::grpcadapter
