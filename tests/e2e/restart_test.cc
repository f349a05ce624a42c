// Durability: every acknowledged Allocate/RemovePod survives SIGKILL; corrupt and malformed
// checkpoints stop the daemon with a message naming the file.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;

namespace {

grpc::Status AllocateHost(Harness& h, const std::string& uid, const std::string& container,
                          double mbps) {
  auto req = Req::Container(uid, rp::MAIN, "shared_cores", mbps);
  req.set_container_name(container);
  Req::NamespaceType(&req, "host_ns");  // eth0 only: its ingress allocatable is 17250
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  return h.Plugin()->Allocate(&ctx, req, &resp);
}

double AllocatedQuantity(Harness& h, const std::string& uid, const std::string& container) {
  grpc::ClientContext ctx;
  rp::GetTopologyAwareResourcesRequest q;
  q.set_pod_uid(uid);
  q.set_container_name(container);
  rp::GetTopologyAwareResourcesResponse tr;
  auto st = h.Plugin()->GetTopologyAwareResources(&ctx, q, &tr);
  if (!st.ok() || !tr.has_container_topology_aware_resources()) return -1;
  return tr.container_topology_aware_resources()
      .allocated_resources()
      .at(kResource)
      .aggregated_quantity();
}

}  // namespace

TEST_CASE("e2e: acknowledged allocations survive SIGKILL and the machine state is recomputed") {
  Harness h;
  h.Start();
  REQUIRE(AllocateHost(h, "p1", "c1", 5000).ok());
  REQUIRE(AllocateHost(h, "p1", "c2", 3000).ok());
  REQUIRE(AllocateHost(h, "p2", "c1", 4000).ok());
  {
    grpc::ClientContext ctx;
    rp::RemovePodRequest rm;
    rm.set_pod_uid("p2");
    rp::RemovePodResponse rr;
    REQUIRE(h.Plugin()->RemovePod(&ctx, rm, &rr).ok());
  }
  CHECK(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);

  h.Start();
  CHECK(AllocatedQuantity(h, "p1", "c1") == 5000);
  CHECK(AllocatedQuantity(h, "p1", "c2") == 3000);
  CHECK(AllocatedQuantity(h, "p2", "c1") == -1);
  // eth0 ingress: 17250 allocatable, 8000 held, so 9250 are free after the restart.
  CHECK_FALSE(AllocateHost(h, "p3", "c1", 9251).ok());
  CHECK(AllocateHost(h, "p3", "c1", 9250).ok());
  CHECK_FALSE(AllocateHost(h, "p4", "c1", 1).ok());

  // A graceful stop removes the socket.
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  CHECK_FALSE(std::filesystem::exists(h.socket_path()));

  h.Start();
  CHECK(AllocatedQuantity(h, "p3", "c1") == 9250);
}

TEST_CASE("e2e: a checkpoint failing its checksum needs --skip-network-state-corruption") {
  Harness h;
  h.Start();
  REQUIRE(AllocateHost(h, "p1", "c1", 5000).ok());
  CHECK(h.daemon().Stop(SIGTERM) == 0);

  // Edit a value without breaking the JSON: the checksum no longer matches.
  std::string text = netqos::testing::ReadFile(h.checkpoint_path());
  auto doc = nlohmann::json::parse(text);
  doc["pod_entries"]["p1"]["c1"]["egress"] = 4000;
  std::ofstream(h.checkpoint_path(), std::ios::trunc) << doc.dump();

  netqos::testing::DaemonProcess refused(h.DaemonArgv(FixtureFlags()), h.log_path());
  CHECK(refused.WaitExit() != 0);
  CHECK_THAT(refused.Log(), Catch::Contains(h.checkpoint_path()));
  CHECK_THAT(refused.Log(),
             Catch::Contains("the checkpoint is damaged; fix or move the file aside"));

  auto flags = FixtureFlags();
  flags.push_back("--skip-network-state-corruption");
  h.Start(flags);
  CHECK(AllocatedQuantity(h, "p1", "c1") == 4000);
}

TEST_CASE("e2e: a Katalyst checkpoint with its real checksum loads without the skip flag") {
  Harness h;
  h.Start();
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  // Byte for byte as Katalyst v0.5.3 writes it, checksum included (computed and written by
  // tests/tools/katalyst_checksum -sign).
  std::ofstream(h.checkpoint_path(), std::ios::trunc)
      << R"({"policyName":"static","machineState":{},"pod_entries":{"p1":{"c1":{"pod_uid":"p1",)"
         R"("pod_namespace":"test","pod_name":"test","container_name":"c1",)"
         R"("container_type":"MAIN","egress":5000,"ingress":5000,"if_name":"eth0",)"
         R"("numa_node":"0-1","labels":{"katalyst.kubewharf.io/qos_level":"shared_cores"},)"
         R"("annotations":{"katalyst.kubewharf.io/qos_level":"shared_cores"}}}},)"
         R"("checksum":881851829})";
  h.Start();
  CHECK(AllocatedQuantity(h, "p1", "c1") == 5000);
  CHECK_THAT(h.daemon().Log(), Catch::Contains("Katalyst checksum verified"));
}

TEST_CASE(
    "e2e: a Katalyst v0.5.3 checkpoint imports its NIC in another namespace, its level, and "
    "not the journal of an earlier netqos run") {
  Harness h;
  h.Start();
  REQUIRE(AllocateHost(h, "p0", "c1", 1000).ok());
  CHECK(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);  // p0 stays in the journal only
  // Katalyst took over and wrote its own file: one pod on eth2 (which is in ns2; v0.5.3 writes
  // no ns_name and no level), and not p0.
  nlohmann::json entry = nlohmann::json::parse(R"({"pod_uid":"p1","pod_namespace":"test",
    "pod_name":"test","container_name":"c1","container_type":"MAIN","egress":5000,
    "ingress":5000,"if_name":"eth2","numa_node":"2-3",
    "labels":{"katalyst.kubewharf.io/qos_level":"reclaimed_cores"},
    "annotations":{"katalyst.kubewharf.io/qos_level":"reclaimed_cores"}})");
  nlohmann::json doc = {{"policyName", "static"},
                        {"pod_entries", {{"p1", {{"c1", entry}}}}},
                        {"machineState", nlohmann::json::object()},
                        {"checksum", 1234567}};
  std::ofstream(h.checkpoint_path(), std::ios::trunc) << doc.dump();
  auto flags = FixtureFlags();
  flags.push_back("--skip-network-state-corruption");
  h.Start(flags);
  CHECK(AllocatedQuantity(h, "p0", "c1") == -1);
  CHECK(AllocatedQuantity(h, "p1", "c1") == 5000);
  // Its 5000 are held on ns2's eth2 (21250 allocatable ingress): 16250 remain there, not 21250.
  auto on_eth2 = [&](const std::string& uid, double mbps) {
    auto req = Req::Container(uid, rp::MAIN, "reclaimed_cores", mbps);
    req.set_container_name("c1");
    Req::NamespaceType(&req, "anti_host_ns");
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    return h.Plugin()->Allocate(&ctx, req, &resp);
  };
  CHECK_FALSE(on_eth2("p2", 16251).ok());
  CHECK(on_eth2("p2", 16250).ok());
  // The level came from the annotations: the snapshot written at start records it.
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  auto written = nlohmann::json::parse(netqos::testing::ReadFile(h.checkpoint_path()));
  CHECK(written["pod_entries"]["p1"]["c1"]["qosLevel"] == "reclaimed_cores");
  CHECK(written["pod_entries"]["p1"]["c1"]["ns_name"] == "ns2");
}

TEST_CASE(
    "e2e: in --checkpoint-mode=full-rewrite every rename of the checkpoint is followed by "
    "an fsync of its directory") {
  // Without it, a power cut after the rename can bring back the file from before the change the
  // kubelet was told had been made. strace -y names each fd's file, so the directory's fsync is
  // told apart from the file's.
  Harness h;
  const std::string trace = h.root() + "/strace.out";
  auto flags = FixtureFlags();
  flags.push_back("--checkpoint-mode=full-rewrite");
  const std::string strace = "/usr/bin/strace";  // scripts/install-deps.sh installs it
  REQUIRE(std::filesystem::exists(strace));
  auto argv = h.DaemonArgv(flags);
  // Under ASan, LeakSanitizer's exit-time check ptrace()s the process's threads, which a traced
  // process cannot allow: that check is off for this one run (the other tests keep it).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string("ASAN_OPTIONS=") +
                                   (asan != nullptr ? std::string(asan) + ":" : "") +
                                   "detect_leaks=0";
  argv.insert(argv.begin(), {strace, "-E", asan_options, "-f", "-qq", "-y", "-o", trace, "-e",
                             "trace=rename,renameat,renameat2,fsync"});
  h.StartArgv(argv);
  // The signals go to netqosd, strace's child: strace would detach on SIGTERM and leave it.
  pid_t netqosd = 0;
  const std::string tracer = std::to_string(h.daemon().pid());
  std::ifstream("/proc/" + tracer + "/task/" + tracer + "/children") >> netqosd;
  REQUIRE(netqosd > 0);
  struct KillOnExit {
    pid_t pid;
    ~KillOnExit() { ::kill(pid, SIGKILL); }
  } guard{netqosd};
  REQUIRE(AllocateHost(h, "p1", "c1", 5000).ok());
  REQUIRE(AllocateHost(h, "p2", "c1", 3000).ok());
  REQUIRE(::kill(netqosd, SIGTERM) == 0);
  CHECK(h.daemon().WaitExit() == 0);  // strace exits with its tracee's status

  const std::string checkpoint = "\"" + h.checkpoint_path() + "\"";
  const std::string dir_fsync = "<" + h.state_dir() + ">)";
  std::istringstream lines(netqos::testing::ReadFile(trace));
  std::string line;
  int renames = 0, synced = 0;
  bool pending = false;
  while (std::getline(lines, line)) {
    if (line.find("rename") != std::string::npos && line.find(checkpoint) != std::string::npos &&
        line.find(" = 0") != std::string::npos) {
      CHECK_FALSE(pending);  // the one before it was never synced
      pending = true;
      ++renames;
    } else if (pending && line.find("fsync(") != std::string::npos &&
               line.find(dir_fsync) != std::string::npos) {
      pending = false;
      ++synced;
    }
  }
  INFO(netqos::testing::ReadFile(trace));
  CHECK(renames >= 3);  // the start-up snapshot and one per Allocate
  CHECK(synced == renames);
}

TEST_CASE("e2e: a checkpoint that cannot be read is not called damaged") {
  Harness h;
  // A directory where the file belongs: open() works, read() fails (EISDIR), as on a bad disk.
  std::filesystem::create_directories(h.checkpoint_path());
  netqos::testing::DaemonProcess refused(h.DaemonArgv(FixtureFlags()), h.log_path());
  CHECK(refused.WaitExit() != 0);
  INFO(refused.Log());
  CHECK_THAT(refused.Log(), Catch::Contains("could not read the checkpoint"));
  CHECK_THAT(refused.Log(), Catch::Contains("Is a directory"));
  CHECK_THAT(refused.Log(), !Catch::Contains("move the file aside"));
  CHECK(std::filesystem::is_directory(h.checkpoint_path()));
}

TEST_CASE("e2e: a malformed checkpoint is never loaded and is left for the operator") {
  Harness h;
  h.Start();
  REQUIRE(AllocateHost(h, "p1", "c1", 5000).ok());
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  std::string text = netqos::testing::ReadFile(h.checkpoint_path());
  std::string truncated = text.substr(0, text.size() / 2);
  std::ofstream(h.checkpoint_path(), std::ios::trunc) << truncated;

  for (bool skip : {false, true}) {
    auto argv = h.DaemonArgv(FixtureFlags());
    if (skip) argv.push_back("--skip-network-state-corruption");
    netqos::testing::DaemonProcess refused(argv, h.log_path());
    CHECK(refused.WaitExit() != 0);
    CHECK_THAT(refused.Log(), Catch::Contains(h.checkpoint_path()));
    CHECK(netqos::testing::ReadFile(h.checkpoint_path()) == truncated);
  }
}

TEST_CASE("e2e: bad topology file or flags stop the daemon with a clear message") {
  Harness h(R"({"nics": [{"name": "eth0", "speed_mbps": "fast"}]})");
  netqos::testing::DaemonProcess bad_topo(h.DaemonArgv({}), h.log_path());
  CHECK(bad_topo.WaitExit() != 0);
  CHECK_THAT(bad_topo.Log(), Catch::Contains("speed_mbps"));

  Harness h2;
  netqos::testing::DaemonProcess bad_flag(
      h2.DaemonArgv({"--network-resource-plugin-egress-capacity-rate=x"}), h2.log_path());
  CHECK(bad_flag.WaitExit() != 0);
  CHECK_THAT(bad_flag.Log(), Catch::Contains("egress-capacity-rate"));

  Harness h3;
  netqos::testing::DaemonProcess bad_rsv(
      h3.DaemonArgv({"--network-resource-plugin-reserved-bandwidth=30000"}), h3.log_path());
  CHECK(bad_rsv.WaitExit() != 0);
  CHECK_THAT(bad_rsv.Log(), Catch::Contains("reservation"));
}

TEST_CASE(
    "e2e: --qrm-enable-in-memory-state moves the checkpoint both ways, and a reboot brings back "
    "nothing stale") {
  Harness h;
  h.Start();
  REQUIRE(AllocateHost(h, "p1", "c1", 5000).ok());
  CHECK(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);

  const std::string in_memory = h.in_memory_state_dir();
  auto flags = FixtureFlags();
  flags.push_back("--qrm-enable-in-memory-state");
  h.Start(flags);
  CHECK(AllocatedQuantity(h, "p1", "c1") == 5000);
  REQUIRE(AllocateHost(h, "p2", "c1", 1000).ok());
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  CHECK(std::filesystem::exists(in_memory + "/network_plugin_state"));

  // Moved, not copied: the on-disk one is gone, so that nothing stale can come back.
  CHECK_FALSE(std::filesystem::exists(h.checkpoint_path()));

  // The in-memory checkpoint is the current one: it holds p2.
  h.Start(flags);
  CHECK(AllocatedQuantity(h, "p2", "c1") == 1000);
  CHECK(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);

  SECTION("a reboot empties the tmpfs: the node starts with no allocation") {
    std::filesystem::remove_all(in_memory);
    h.Start(flags);
    CHECK(AllocatedQuantity(h, "p1", "c1") == -1);
    CHECK(AllocatedQuantity(h, "p2", "c1") == -1);
  }
  SECTION("the mode turned off: the checkpoint moves back to disk, journal included") {
    h.Start();
    CHECK(AllocatedQuantity(h, "p1", "c1") == 5000);
    CHECK(AllocatedQuantity(h, "p2", "c1") == 1000);
    CHECK(std::filesystem::exists(h.checkpoint_path()));
    CHECK_FALSE(std::filesystem::exists(in_memory + "/network_plugin_state"));
  }
}
