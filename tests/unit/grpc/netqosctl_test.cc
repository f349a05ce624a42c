// The netqosctl binary (built next to this test) against a served stack: exit codes, the nil vs
// empty wording, error format, JSON. Skipped with a warning if netqosctl was not built.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/constants.h"
#include "support/process.h"
#include "unit/grpc/fake_enforcement_view.h"
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

TEST_CASE("netqosctl enforcement commands against a daemon with a fake enforcement view",
          "[grpc][ctl]") {
  const std::string binary = CtlPath();
  REQUIRE_FALSE(binary.empty());
  netqos::testing::FakeEnforcementView view(netqos::testing::SampleEnforcementReport());
  netqos::testing::ServedStack stack(&view);
  netqos::testing::TempDir scratch;
  Ctl ctl(binary, stack.socket(), scratch.path());
  // No pins here: the commands fall back to what the daemon reports.
  const std::string no_pins = "--bpf-pin-dir=" + scratch.path() + "/no-pins";

  SECTION("status") {
    auto r = ctl({"status", "--json", no_pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["daemon"]["reachable"] == true);
    CHECK(j["daemon"]["pid"] == ::getpid());
    CHECK(j["daemon"]["socket_paths"][0] == stack.socket());
    CHECK(j["daemon"]["enforcement"]["mode"] == "bpf");
    CHECK(j["daemon"]["enforcement"]["shaped_nics"][0] == "eth0");
    CHECK(j["daemon"]["enforcement"]["problems"][0]["object"] == "nic:ns2-eth2");
    CHECK(j["daemon"]["nics_total"] == 2);
    CHECK(j["daemon"]["nics"][0]["shaped"] == true);
    CHECK(j["pinned"]["exists"] == false);
    CHECK(j["pinned"]["pin_dir"] == scratch.path() + "/no-pins");

    r = ctl({"status", no_pins});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::StartsWith("daemon:"));
    CHECK_THAT(r.output, Catch::Contains("running (netqosd "));
    CHECK_THAT(r.output, Catch::Contains("shaped NICs: eth0"));
    CHECK_THAT(r.output, Catch::Contains("no known speed"));
    CHECK_THAT(r.output, Catch::Contains("pin dir not found: is enforcement on (--enforcement=bpf) "
                                         "and is --bpf-pin-dir right?"));
  }

  SECTION("classes: the daemon's view when the pins cannot be read") {
    auto r = ctl({"classes", "--json", no_pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["daemon_reachable"] == true);
    CHECK(j["pinned_maps_read"] == false);
    CHECK_THAT(j["note"].get<std::string>(), Catch::Contains("pin dir "));
    REQUIRE(j["containers"].size() == 2);
    CHECK(j["containers"][0]["pod_name"] == "web");
    CHECK(j["containers"][0]["container"] == "app");
    CHECK(j["containers"][0]["cgroup_id"] == 4242);
    CHECK(j["containers"][0]["htb_class"] == "10:100");
    CHECK(j["containers"][0]["counters"]["tx_bytes"] == 1000000);
    CHECK(j["queues_read"] == true);
    // Drops are the container's own HTB leaves'; without a leaf of its own: 0.
    CHECK(j["containers"][0]["drops"]["egress"] == 1);
    CHECK(j["containers"][0]["drops"]["ingress"] == 0);
    CHECK(j["containers"][0]["queues"]["egress"]["htb_class"] == "10:100");
    CHECK(j["containers"][0]["queues"]["egress"]["overlimits"] == 55);
    CHECK(j["containers"][0]["queues"]["ingress"].is_null());
    CHECK(j["containers"][1]["drops"]["egress"] == 0);
    CHECK(j["classes"][0]["net_class_id"] == 7);
    CHECK(j["classes"][0]["drops"]["egress"] == 1);

    r = ctl({"classes", no_pins});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("shop/web/app"));
    CHECK_THAT(r.output, Catch::Contains("shop/web/sidecar"));
  }

  SECTION("top: counters through the daemon, one JSON line per refresh") {
    auto r = ctl({"top", "--json", "--iterations", "2", "--interval", "0.1", no_pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::istringstream lines(r.output);
    std::string line;
    int frames = 0;
    while (std::getline(lines, line)) {
      auto j = nlohmann::json::parse(line);
      CHECK(j["source"] == "netqosd");
      CHECK(j["names_from_daemon"] == true);
      REQUIRE(j["containers"].size() == 2);
      CHECK(j["containers"][0]["tx_bits_per_second"] == 0.0);  // the fake's counters stand still
      for (const auto& c : j["containers"]) {
        if (c["container"] != "app") continue;
        CHECK(c["drops"]["egress"] == 1);
        CHECK(c["drops"]["ingress"] == 0);
        CHECK(c["egress_drops_per_second"] == 0.0);
        CHECK(c["totals"]["drops"] == 1);
      }
      CHECK(j["classes"][0]["drops"]["egress"] == 1);
      ++frames;
    }
    CHECK(frames == 2);

    r = ctl({"top", "--iterations", "1", "--interval", "0.1", no_pins});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::StartsWith("netqosctl top: rates over "));
    CHECK(r.output.find("\033[") == std::string::npos);  // no screen clearing into a file
    CHECK(ctl({"top", "--interval", "0", no_pins}).exit_code == 2);
  }

  SECTION("cgroup: by id, known to the daemon") {
    auto r = ctl({"cgroup", "4242", "--json", no_pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["cgroup_id"] == 4242);
    CHECK(j["daemon"]["container"]["pod_name"] == "web");
    CHECK(j["classified"] == false);  // the class map could not be read
    CHECK_THAT(j["reasons"].dump(), Catch::Contains("netqosd wants it classified"));

    r = ctl({"cgroup", scratch.path()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("is not on a cgroup2 mount"));
    r = ctl({"cgroup", scratch.path() + "/nowhere"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("give a cgroup directory"));
  }

  SECTION("daemon unreachable and no pins: both are explained") {
    const std::string none = scratch.path() + "/none.sock";
    auto run = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {binary, "--socket", none});
      return netqos::testing::RunCommand(args, scratch.path() + "/ctl.out");
    };
    auto r = run({"classes", no_pins});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("daemon socket not found at " + none +
                                         ": is netqosd running? (use --socket"));
    CHECK_THAT(r.output, Catch::Contains("pin dir " + scratch.path() +
                                         "/no-pins not found: is enforcement on "
                                         "(--enforcement=bpf) and is --bpf-pin-dir right?"));
    r = run({"top", "--iterations", "1", no_pins});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("/no-pins not found"));
    r = run({"status", no_pins});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::StartsWith("daemon:      NOT REACHABLE: daemon socket not found"));
    r = run({"status", "--json", no_pins});
    CHECK(r.exit_code == 1);
    CHECK(nlohmann::json::parse(r.output)["daemon"]["reachable"] == false);
  }
}

TEST_CASE(
    "netqosctl shows the tenant policy in force and the decisions, with every tenant value escaped",
    "[grpc][ctl]") {
  const std::string binary = CtlPath();
  REQUIRE_FALSE(binary.empty());
  service::EnforcementReport report = netqos::testing::SampleEnforcementReport();
  // What a hostile pod's annotation leaves in a problem and a decision.
  const std::string hostile =
      "\x1b]0;owned\x07\x1b[2J\nnetqos: fine\r\xc2\x9b"
      "31m";
  report.problems.push_back(
      {ProblemKind::kContainer, "container:shop/web", "refused netqos.io/dscp=" + hostile, 1});
  report.containers[0].tenant_policy = "namespace shop";
  report.containers[0].tenant_decisions.push_back(
      {"netqos.io/dscp", hostile, "refused", "DSCP 46 (EF) is not one the policy lists"});
  netqos::testing::FakeEnforcementView view(report);
  service::TenantPolicyReport policy{"/etc/netqos/tenant-policy/policy.json",
                                     "/etc/netqos/tenant-policy/policy.json (read 2026-01-01)",
                                     2,
                                     "2026-01-01T00:00:00Z",
                                     "namespaces.shop.borrow: must be true or false",
                                     5,
                                     R"({"version": 1, "default": {"honoured_annotations": [],
                                        "borrow": false, "dscp": [], "max_burst": null,
                                        "implicit_bandwidth_max_mbps": 0,
                                        "unallocated_qos_level_max": null},
                                        "namespaces": {"shop": {"honoured_annotations": [],
                                        "borrow": true, "dscp": [46], "max_burst": 65536,
                                        "implicit_bandwidth_max_mbps": 0,
                                        "unallocated_qos_level_max": null,
                                        "aggregate": {"egress": "500000000", "ingress": null,
                                        "egress_guarantee": null, "ingress_guarantee": null}}}})"};
  netqos::testing::ServedStack stack(&view, [&policy] { return policy; });
  netqos::testing::TempDir scratch;
  Ctl ctl(binary, stack.socket(), scratch.path());
  const std::string no_pins = "--bpf-pin-dir=" + scratch.path() + "/no-pins";

  SECTION("tenant-policy") {
    auto r = ctl({"tenant-policy"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("NOT in force, the policy above stays: "
                                         "namespaces.shop.borrow"));
    CHECK_THAT(r.output, Catch::Contains("2 taken, 5 failed"));
    CHECK_THAT(r.output, Catch::Contains("(default)"));
    CHECK_THAT(r.output, Catch::Contains("shop"));
    CHECK_THAT(r.output, Catch::Contains("tx 500000000 rx - bit/s"));
    r = ctl({"tenant-policy", "--json"});
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["policy"]["namespaces"]["shop"]["borrow"] == true);
    CHECK(j["generation"] == 2);
  }

  SECTION("status and classes escape what the tenant wrote") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status", no_pins},
          std::vector<std::string>{"status", "--json", no_pins},
          std::vector<std::string>{"classes", "--json", no_pins}}) {
      auto r = ctl(args);
      INFO(args[0] << " " << r.output);
      REQUIRE(r.exit_code == 0);
      CHECK(r.output.find('\x1b') == std::string::npos);
      CHECK(r.output.find('\x07') == std::string::npos);
      CHECK(r.output.find('\r') == std::string::npos);
      CHECK(r.output.find("\xc2\x9b") == std::string::npos);
      CHECK(r.output.find("\nnetqos: fine") == std::string::npos);
    }
    auto r = ctl({"status", no_pins});
    CHECK_THAT(r.output, Catch::Contains("\\x1b]0;owned"));
    auto j = nlohmann::json::parse(ctl({"classes", "--json", no_pins}).output);
    CHECK(j["containers"][0]["tenant_policy"] == "namespace shop");
    CHECK(j["containers"][0]["tenant_decisions"][0]["verdict"] == "refused");
  }
}

}  // namespace netqos::grpcadapter
