// The command line of the real binaries, as a DaemonSet or a script meets it: exit codes (0 ok,
// 1 runtime failure, 2 usage error; docs/operations.md, "Exit codes"), a repeated flag's last
// value winning, Go durations, and --print-topology's reason for a NIC without capacity.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::e2e {
namespace {

namespace t = netqos::testing;

// netqosd with a topology file (so nothing reads the host's NICs) and `args`.
t::CommandResult Netqosd(const t::TempDir& dir, std::vector<std::string> args) {
  const std::string topo = dir.file("topology.json");
  std::ofstream(topo) << FixtureTopology();
  args.insert(args.begin(), {NETQOSD_PATH, "--topology-file=" + topo});
  return t::RunCommand(args, dir.file("netqosd.out"));
}

t::CommandResult Netqosctl(const t::TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), NETQOSCTL_PATH);
  return t::RunCommand(args, dir.file("netqosctl.out"));
}

}  // namespace

TEST_CASE("e2e: netqosd exits 2 on an unknown flag, naming it, and on a bad value") {
  t::TempDir dir;
  auto unknown = Netqosd(dir, {"--enforcment=none"});
  INFO(unknown.output);
  CHECK(unknown.exit_code == 2);  // CLI11's own code was 109
  CHECK_THAT(unknown.output, Catch::Contains("--enforcment"));

  auto stray = Netqosd(dir, {"stray-argument"});
  INFO(stray.output);
  CHECK(stray.exit_code == 2);
  CHECK_THAT(stray.output, Catch::Contains("stray-argument"));

  auto bad_number = Netqosd(dir, {"--network-resource-plugin-reserved-bandwidth=lots"});
  INFO(bad_number.output);
  CHECK(bad_number.exit_code == 2);  // was 104
  CHECK_THAT(bad_number.output, Catch::Contains("--network-resource-plugin-reserved-bandwidth") &&
                                    Catch::Contains("lots"));

  auto bad_duration = Netqosd(dir, {"--enforcement-resync-period=-30s"});
  INFO(bad_duration.output);
  CHECK(bad_duration.exit_code == 2);
  CHECK_THAT(bad_duration.output, Catch::Contains("--enforcement-resync-period=\"-30s\"") &&
                                      Catch::Contains("negative"));

  auto missing = Netqosd(dir, {"--qrm-state-dir"});
  INFO(missing.output);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("--qrm-state-dir"));

  for (const char* ok : {"--help", "--version"}) {
    auto r = Netqosd(dir, {ok});
    INFO(ok << "\n" << r.output);
    CHECK(r.exit_code == 0);
  }
  auto help = Netqosd(dir, {"--help"});
  CHECK_THAT(help.output, Catch::Contains("Exit codes: 0 success"));
}

TEST_CASE("e2e: netqosd takes a repeated flag's last value, as Go's flag package does") {
  t::TempDir dir;
  auto r =
      Netqosd(dir, {"--qrm-state-dir=/var/lib/first", "--nic-selection=first",
                    "--qrm-state-dir=/var/lib/second", "--nic-selection=last", "--print-config"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);  // was 114: "At Most 1 required but received 2"
  CHECK_THAT(r.output, Catch::Contains("qrm-state-dir=\"/var/lib/second\""));
  CHECK_THAT(r.output, !Catch::Contains("/var/lib/first"));
  CHECK_THAT(r.output, Catch::Contains("nic-selection=\"last\""));
}

TEST_CASE("e2e: netqosd takes Go durations, and serves with them") {
  t::TempDir dir;
  auto printed = Netqosd(dir, {"--enforcement-resync-period=1m30s",
                               "--kubelet-registration-timeout=1.5m", "--print-config"});
  INFO(printed.output);
  REQUIRE(printed.exit_code == 0);  // was 104: "Could not convert"
  CHECK_THAT(printed.output, Catch::Contains("enforcement-resync-period=\"1m30s\""));
  CHECK_THAT(printed.output, Catch::Contains("kubelet-registration-timeout=\"1m30s\""));

  std::vector<std::string> flags = FixtureFlags();
  flags.insert(flags.end(),
               {"--kubelet-registration-timeout=2m", "--enforcement-resync-period=45"});
  Harness h;
  h.Start(flags);
  CHECK(h.daemon().Running());
}

TEST_CASE(
    "e2e: netqosctl exits 2 on an unknown subcommand, naming it, and takes a repeated "
    "flag's last value") {
  t::TempDir dir;
  auto unknown = Netqosctl(dir, {"frobnicate"});
  INFO(unknown.output);
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Catch::Contains("unknown subcommand \"frobnicate\""));

  auto unknown_flag = Netqosctl(dir, {"status", "--no-such-flag"});
  INFO(unknown_flag.output);
  CHECK(unknown_flag.exit_code == 2);
  CHECK_THAT(unknown_flag.output, Catch::Contains("--no-such-flag"));

  auto bad_value = Netqosctl(dir, {"--timeout=soon", "allocations"});
  INFO(bad_value.output);
  CHECK(bad_value.exit_code == 2);

  for (const char* ok : {"--help", "--version"}) {
    auto r = Netqosctl(dir, {ok});
    INFO(ok << "\n" << r.output);
    CHECK(r.exit_code == 0);
  }

  // A runtime failure is 1, not 2: the command line was right, nothing answered.
  auto nobody = Netqosctl(dir, {"--socket=" + dir.file("none.sock"), "allocations"});
  INFO(nobody.output);
  CHECK(nobody.exit_code == 1);

  // The last --socket is the daemon's: before, the second --socket was a usage error.
  Harness h;
  h.Start();
  auto last = Netqosctl(
      dir, {"--socket=" + dir.file("none.sock"), "--socket=" + h.socket_path(), "allocations"});
  INFO(last.output);
  CHECK(last.exit_code == 0);
}

TEST_CASE("e2e: netqosd --print-topology says why a NIC of unknown speed takes nothing") {
  t::TempDir dir;
  const std::string topo = dir.file("unknown-speed.json");
  std::ofstream(topo) << R"({"numa_nodes": [{"id": 0, "socket": 0}],
    "nics": [{"name": "eth0", "speed_mbps": -1, "numa_node": 0, "ipv4": ["10.0.0.1"]},
             {"name": "eth1", "speed_mbps": 25000, "numa_node": 0, "ipv4": ["10.0.0.2"]}]})";
  auto r =
      t::RunCommand({NETQOSD_PATH, "--topology-file=" + topo, "--print-topology"}, dir.file("out"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::string eth0;
  std::string eth1;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" eth0 ") != std::string::npos) eth0 = line;
    if (line.find(" eth1 ") != std::string::npos) eth1 = line;
  }
  CHECK_THAT(eth0, Catch::Contains("speed unknown, so capacity 0") &&
                       Catch::Contains("speed_mbps in the topology file"));
  REQUIRE_FALSE(eth1.empty());
  CHECK_THAT(eth1, !Catch::Contains("capacity 0"));  // a known speed: nothing to explain
}

}  // namespace netqos::e2e
