// netqosctl's operator commands against the real netqosd with enforcement off (the e2e tier's
// mode): status reports the daemon, its sockets and NICs; classes and cgroup say enforcement is
// off; after SIGKILL the left-over socket is diagnosed as nobody answering. And enforcement asked
// for but unable to start: reported, allocations still served.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;
using nlohmann::json;

TEST_CASE("e2e: netqosctl status and classes and cgroup with enforcement off") {
  Harness h;
  h.Start();
  const std::string no_pins = "--bpf-pin-dir=" + h.root() + "/no-pins";

  auto r = h.CtlAllocateWeb();
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
  CHECK(j["note"].is_null());  // nothing pinned is expected with enforcement off
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

// Enforcement starts after the plugin socket is served. When it cannot start, netqosd keeps
// serving allocations (an exiting daemon would fail every admission on the node, and a restart
// would not fix the cause) and says so in status; /readyz says it too (tests/unit/app).
TEST_CASE("e2e: enforcement that cannot start leaves netqosd serving, status says disabled") {
  Harness h;
  // The pin dir's parent is not a bpffs and not empty: refused before anything is loaded or
  // mounted, so the test needs no privilege and leaves nothing behind.
  const std::string not_bpffs = h.root() + "/not-bpffs";
  std::filesystem::create_directories(not_bpffs);
  std::ofstream(not_bpffs + "/a-file") << "x";
  const std::string pin_dir = "--bpf-pin-dir=" + not_bpffs + "/pins";
  std::vector<std::string> flags = FixtureFlags();
  flags.insert(flags.end(), {"--enforcement=bpf", pin_dir});
  h.Start(flags);

  auto r = h.CtlAllocateWeb();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  json e;
  for (int i = 0; i < 200; ++i) {  // the start runs beside serving: wait for its verdict
    r = h.Ctl({"status", "--json", pin_dir});
    REQUIRE(r.exit_code == 0);
    e = json::parse(r.output)["daemon"]["enforcement"];
    if (e["mode"] != "bpf") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(e["mode"] == "disabled");
  CHECK(e["starting"] == false);
  CHECK_THAT(e["error"].get<std::string>(), Catch::Contains("is not a bpffs and not empty"));
  r = h.Ctl({"status", pin_dir});
  CHECK_THAT(r.output, Catch::Contains("enforcement: disabled: --bpf-pin-dir"));
  CHECK_THAT(r.output, Catch::Contains("1 containers in 1 pods"));
  CHECK(h.daemon().Running());
  CHECK_THAT(h.daemon().Log(), Catch::Contains("enforcement disabled, serving allocations only"));
  CHECK_FALSE(std::filesystem::exists(not_bpffs + "/pins"));
}
