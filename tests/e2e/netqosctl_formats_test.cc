// netqosctl's output formats against the real netqosd (enforcement off): every command that prints
// data honours -o json, -o yaml and -o wide, and --json is -o json; JSON carries schema_version and
// null for what is absent; status shows the format stamps the daemon reads; `cgroup <id>` exits 1
// when nothing knows the cgroup; a numeric flag's bad value reads well.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/process.h"
#include "support/temp_dir.h"

using namespace netqos::e2e;
using nlohmann::json;

TEST_CASE("e2e: every netqosctl command that prints data honours -o json, yaml and wide") {
  Harness h;
  h.Start();
  const std::string no_pins = "--bpf-pin-dir=" + h.root() + "/no-pins";
  auto r = h.CtlAllocateWeb();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  const std::vector<std::vector<std::string>> commands = {
      {"status", no_pins},
      {"classes", no_pins},
      {"allocations"},
      {"capacity"},
      {"topology"},
      {"tenant-policy"},
      {"options"},
      {"plugin-info"},
      {"version"},
      {"hints", "--pod-uid", "p2", "--container", "app", "--mbps", "10"},
      {"topology-aware", "--pod-uid", "p1", "--container", "app"},
      {"top", "--iterations", "1", "--interval", "0.1", no_pins}};
  for (const auto& cmd : commands) {
    for (const char* format : {"json", "yaml", "wide", "table"}) {
      std::vector<std::string> args = cmd;
      args.insert(args.begin(), {"-o", format});
      r = h.Ctl(args);
      INFO(cmd.front() << " -o " << format << "\n" << r.output);
      CHECK(r.exit_code == 0);
      if (std::string(format) == "json") {
        const json j = json::parse(r.output, nullptr, false);
        REQUIRE_FALSE(j.is_discarded());
        CHECK(j["schema_version"] == 1);
      } else if (std::string(format) == "yaml") {
        CHECK_THAT(r.output, Catch::Contains("\nschema_version: 1\n") ||
                                 Catch::StartsWith("schema_version: 1\n") ||
                                 Catch::StartsWith("---\n"));
        // Block style: a document is never one JSON-like flow mapping ("{}" only for empty ones).
        CHECK(r.output.find("{\"") == std::string::npos);
        CHECK(r.output.front() != '{');
      } else {
        CHECK(r.output.find("schema_version") == std::string::npos);
      }
    }
    // --json is -o json, before or after the command.
    std::vector<std::string> args = cmd;
    args.push_back("--json");
    r = h.Ctl(args);
    INFO(cmd.front() << " --json\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(json::parse(r.output, nullptr, false).is_discarded());
  }

  // Absent values are null, not "" or 0; present ones stay.
  r = h.Ctl({"allocations", "-o", "json"});
  json j = json::parse(r.output);
  REQUIRE(j["allocations"].size() == 1);
  CHECK(j["allocations"][0]["pod_name"] == "web");
  CHECK(j["allocations"][0]["netns"].is_null());  // the fixture's NICs are the host's
  r = h.Ctl({"allocations", "-o", "wide"});
  CHECK_THAT(r.output, Catch::Contains("NETNS"));
  CHECK_THAT(r.output, Catch::Contains("<host>"));
  CHECK(h.Ctl({"allocations"}).output.find("NETNS") == std::string::npos);
  r = h.Ctl({"topology", "-o", "wide"});
  CHECK_THAT(r.output, Catch::Contains("NETNS PATH"));
  CHECK(h.Ctl({"topology"}).output.find("NETNS PATH") == std::string::npos);
  r = h.Ctl({"tenant-policy", "-o", "json"});
  j = json::parse(r.output);
  CHECK(j["error"].is_null());
  CHECK(j["path"].is_null());  // no --tenant-policy-file
  r = h.Ctl({"status", "-o", "yaml", no_pins});
  CHECK_THAT(r.output, Catch::Contains("\n  enforcement:\n"));
  CHECK_THAT(r.output, Catch::Contains("    error: null\n"));
  CHECK_THAT(r.output, Catch::Contains("    mode: none\n"));
}

TEST_CASE("e2e: netqosctl status shows the format stamps netqosd reads") {
  Harness h;
  h.Start();
  const std::string no_pins = "--bpf-pin-dir=" + h.root() + "/no-pins";
  auto r = h.Ctl({"status", "-o", "json", no_pins});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.output);
  const json& own = j["daemon"]["own_format"];
  REQUIRE(own.is_object());
  CHECK(own["generation"].get<int>() >= 1);
  CHECK(own["min_reader"].get<int>() >= 1);
  CHECK_FALSE(own["release"].get<std::string>().empty());
  // Enforcement is off: no pin directory, only the state directories (--qrm-state-dir is stamped
  // at start; the in-memory one is listed, stamped or not).
  const json& stamps = j["daemon"]["format_stamps"];
  REQUIRE(stamps.size() == 2);
  const json& state = stamps[0];
  CHECK(state["kind"] == "state_dir");
  CHECK(state["path"] == h.state_dir() + "/netqos_format.json");
  CHECK(state["present"] == true);
  CHECK(state["generation"] == own["generation"]);
  CHECK(state["min_reader"] == own["min_reader"]);
  CHECK(state["release"] == own["release"]);
  CHECK(state["error"].is_null());
  CHECK(j["pinned"]["format_stamp"].is_null());  // read here only when the daemon is down

  r = h.Ctl({"status", no_pins});
  CHECK_THAT(r.output, Catch::Contains("format:      writes generation " +
                                       std::to_string(own["generation"].get<int>())));
  CHECK_THAT(r.output, Catch::Contains("format stamps:\n  DIRECTORY  WRITTEN BY"));
  CHECK_THAT(r.output, Catch::Contains("  state      " + own["release"].get<std::string>()));
  CHECK(r.output.find(h.state_dir() + "/netqos_format.json") == std::string::npos);
  r = h.Ctl({"status", "-o", "wide", no_pins});
  CHECK_THAT(r.output, Catch::Contains(h.state_dir() + "/netqos_format.json"));
}

TEST_CASE("e2e: netqosctl cgroup exits 1 when nothing knows the cgroup, saying what it tried") {
  netqos::testing::TempDir dir;
  const std::string none = dir.file("none.sock");
  auto r = netqos::testing::RunCommand({NETQOSCTL_PATH, "--socket=" + none, "cgroup",
                                        "987654321987", "--bpf-pin-dir=" + dir.file("no-pins")},
                                       dir.file("ctl.out"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("cgroup 987654321987: nothing is known of it. Tried: "));
  CHECK_THAT(r.output, Catch::Contains(dir.file("no-pins")));
  CHECK_THAT(r.output, Catch::Contains("daemon socket not found at " + none));

  // With a daemon that has no record of it either: still nothing to tell.
  Harness h;
  h.Start();
  r = h.Ctl({"cgroup", "987654321987", "--bpf-pin-dir=" + dir.file("no-pins")});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("netqosd has no record of it"));
}

TEST_CASE("e2e: netqosctl names a numeric flag's bad value with a readable range") {
  netqos::testing::TempDir dir;
  auto r =
      netqos::testing::RunCommand({NETQOSCTL_PATH, "--timeout=abc", "status"}, dir.file("ctl.out"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output ==
        "--timeout: \"abc\" is not a number: give a number from 0.001 to 86400 seconds\n"
        "Run with --help for more information.\n");
}
