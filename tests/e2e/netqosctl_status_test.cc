// netqosctl's operator commands against the real netqosd with enforcement off (the e2e tier's
// mode): status reports the daemon, its sockets and NICs; classes and cgroup say enforcement is
// off; after SIGKILL the left-over socket is diagnosed as nobody answering.
#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;
using nlohmann::json;

TEST_CASE("e2e: netqosctl status and classes and cgroup with enforcement off") {
  Harness h;
  h.Start();
  const std::string no_pins = "--bpf-pin-dir=" + h.root() + "/no-pins";

  auto r = h.Ctl({"allocate", "--pod-uid", "p1", "--pod-name", "web", "--container", "app", "--qos",
                  "shared_cores", "--mbps", "500"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  r = h.Ctl({"status", "--json", no_pins});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.output);
  const json& d = j["daemon"];
  CHECK(d["reachable"] == true);
  CHECK(d["pid"] == h.daemon().pid());
  CHECK(d["version"] == j["netqosctl_version"]);
  CHECK(d["uptime_seconds"].get<double>() >= 0);
  REQUIRE(d["socket_paths"].size() == 1);
  CHECK(d["socket_paths"][0] == h.socket_path());
  CHECK_THAT(d["topology_source"].get<std::string>(), Catch::StartsWith("file "));
  CHECK(d["pods"] == 1);
  CHECK(d["containers"] == 1);
  CHECK(d["allocated_egress_mbps"] == 500);
  CHECK(d["nics_total"] == 2);
  CHECK(d["nics_healthy"] == 2);
  CHECK(d["enforcement"]["mode"] == "none");
  CHECK(d["enforcement"]["pin_dir"] == "/sys/fs/bpf/netqos");  // the daemon's default
  CHECK(j["pinned"]["exists"] == false);

  r = h.Ctl({"status", no_pins});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("enforcement: none (allocations only"));
  CHECK_THAT(r.output, Catch::Contains("1 containers in 1 pods, 500/500 Mbps"));
  CHECK_THAT(r.output,
             Catch::Contains("pin dir not found (enforcement is off: nothing is pinned)"));

  r = h.Ctl({"classes", "--json", no_pins});
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.output);
  CHECK(j["mode"] == "none");
  CHECK(j["containers"].empty());
  CHECK(j["note"] == "");  // nothing pinned is expected with enforcement off
  r = h.Ctl({"classes", no_pins});
  CHECK(r.output == "no class entries: enforcement is off in netqosd (mode none)\n");

  r = h.Ctl({"top", "--json", "--iterations", "1", "--interval", "0.1", no_pins});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.output);
  CHECK(j["containers"].empty());
  CHECK(j["note"] == "enforcement is off in netqosd (mode none): nothing is classified or counted");

  // The mount netqos would use, as `netqosctl cgroup-mount` prints it (exit 1: none here).
  r = h.Ctl({"cgroup-mount"});
  INFO(r.output);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  if (r.exit_code == 0) {
    const std::string mount = r.output.substr(0, r.output.find('\n'));
    REQUIRE(mount.front() == '/');
    r = h.Ctl({"cgroup", mount, "--json", no_pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    j = json::parse(r.output);
    CHECK(j["classified"] == false);
    CHECK(j["daemon"]["mode"] == "none");
    CHECK_THAT(j["reasons"].dump(), Catch::Contains("start it with --enforcement=bpf"));
    CHECK_THAT(j["reasons"].dump(), Catch::Contains("not a container cgroup"));
  }

  // SIGKILL leaves the socket file behind: nobody answers on it.
  REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  r = h.Ctl({"status", no_pins});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output,
             Catch::Contains("NOT REACHABLE: GetStatus: UNAVAILABLE: nothing answers on " +
                             h.socket_path() + " (connection refused)"));
  CHECK_THAT(r.output, Catch::Contains("is netqosd running?"));
  r = h.Ctl({"classes", no_pins});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("ListClasses: UNAVAILABLE"));
}
