// The migration guide of docs/compatibility.md, end to end: Katalyst -> netqos -> Katalyst ->
// netqos on one node's checkpoint, with the real netqosd and the Go reference standing in for
// Katalyst (it decodes and verifies the file as Katalyst's restore does, and writes it as
// Katalyst does). Hidden from discovery; run as the CTest test "e2e: Katalyst -> netqos ->
// Katalyst migration" (labels e2e;go), see support/katalyst_go_tool.h.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/files.h"
#include "support/katalyst_go_tool.h"

namespace netqos::e2e {
namespace {

namespace t = netqos::testing;
using nlohmann::json;

json Entry(const std::string& uid, const std::string& nic, uint32_t mbps, bool with_netns) {
  json e = {{"pod_uid", uid},
            {"pod_namespace", "default"},
            {"pod_name", "web-" + uid},
            {"container_name", "main"},
            {"container_type", "MAIN"},
            {"egress", mbps},
            {"ingress", mbps},
            {"if_name", nic},
            {"numa_node", nic == "eth0" ? "0-1" : "2-3"},
            {"labels", {{kQosKey, "shared_cores"}}},
            {"annotations", {{kQosKey, "shared_cores"}}}};
  // v0.5.3 has no ns_name; netqos finds the one NIC of that name.
  if (with_netns) e["ns_name"] = nic == "eth2" ? "ns2" : "";
  return e;
}

// What Katalyst would have on disk: two pods on eth0, one on eth2 in namespace ns2.
std::string KatalystCheckpoint(bool head) {
  json pods = json::object();
  pods["kat-a"]["main"] = Entry("kat-a", "eth0", 3000, head);
  pods["kat-b"]["main"] = Entry("kat-b", "eth0", 2000, head);
  pods["kat-c"]["main"] = Entry("kat-c", "eth2", 4000, head);
  return json{{"policyName", "static"}, {"machineState", json::object()}, {"pod_entries", pods}}
      .dump();
}

// Katalyst's restore of `path`: exit 0 and the decoded checkpoint, or what went wrong.
json KatalystLoads(const std::string& path, const std::string& layout) {
  auto run = t::GoTool::Get().Run({"-layout", layout, "-verify", path});
  INFO("Katalyst (" << layout << ") loading " << path << ": " << run.output);
  REQUIRE(run.exit_code == 0);
  return json::parse(run.output.substr(run.output.find('{')));
}

std::set<std::string> Pods(const json& checkpoint) {
  std::set<std::string> uids;
  for (const auto& [uid, containers] : checkpoint["pod_entries"].items()) uids.insert(uid);
  return uids;
}

json Status(Harness& h) {
  auto r = h.Ctl({"status", "--json", "--bpf-pin-dir=" + h.root() + "/no-pins"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.output)["daemon"];
}

std::string NicOf(Harness& h, const std::string& uid) {
  auto plugin = h.Plugin();
  grpc::ClientContext ctx;
  rp::GetTopologyAwareResourcesRequest q;
  q.set_pod_uid(uid);
  q.set_container_name("main");
  rp::GetTopologyAwareResourcesResponse tr;
  auto st = plugin->GetTopologyAwareResources(&ctx, q, &tr);
  INFO(uid << ": " << st.error_message());
  REQUIRE(st.ok());
  const auto& res = tr.container_topology_aware_resources().allocated_resources().at(kResource);
  REQUIRE(res.topology_aware_quantity_list_size() == 1);
  const auto& nic = res.topology_aware_quantity_list(0);
  const auto ns = nic.annotations().find("katalyst.kubewharf.io/netns_name");
  const bool host = ns == nic.annotations().end() || ns->second.empty();
  return host ? nic.name() : ns->second + "/" + nic.name();
}

void AllocateShared(Harness& h, const std::string& uid, double mbps) {
  auto req = Req::Container(uid, rp::MAIN, "shared_cores", mbps);
  req.set_container_name("main");
  Req::NamespaceType(&req, "host_ns_preferred");
  Req::Hint(&req, {0, 1}, true);
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  auto st = h.Plugin()->Allocate(&ctx, req, &resp);
  INFO(uid << ": " << st.error_message());
  REQUIRE(st.ok());
}

void RemovePod(Harness& h, const std::string& uid) {
  grpc::ClientContext ctx;
  rp::RemovePodRequest rm;
  rm.set_pod_uid(uid);
  rp::RemovePodResponse resp;
  auto st = h.Plugin()->RemovePod(&ctx, rm, &resp);
  INFO(uid << ": " << st.error_message());
  REQUIRE(st.ok());
}

std::vector<std::string> Journal(const std::string& dir) {
  std::vector<std::string> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name.rfind("network_plugin_state.wal.", 0) == 0) segments.push_back(name);
  }
  return segments;
}

TEST_CASE("e2e: Katalyst -> netqos -> Katalyst migration", "[.][katalyst_go]") {
  if (!t::GoToolAvailable()) return;
  for (const std::string layout : {"v0.5.3", "head"}) {
    INFO("Katalyst layout " << layout);
    Harness h;
    std::filesystem::create_directories(h.state_dir());
    const std::string cp = h.checkpoint_path();

    // 1. Katalyst ran here: its checkpoint, signed as it signs it.
    t::WriteFile(cp, KatalystCheckpoint(layout == "head"));
    REQUIRE(t::GoTool::Get().Run({"-layout", layout, "-sign", cp}).exit_code == 0);

    // 2. netqos takes over: no skip flag; every pod counted on its NIC.
    std::vector<std::string> flags = FixtureFlags();
    flags.push_back("--katalyst-checkpoint-layout=" + layout);
    h.Start(flags);
    CHECK(Status(h)["pods"] == 3);
    CHECK(Status(h)["allocated_egress_mbps"] == 9000);
    CHECK(NicOf(h, "kat-a") == "eth0");
    CHECK(NicOf(h, "kat-c") == "ns2/eth2");
    // Its start-up snapshot already loads in Katalyst.
    CHECK(Pods(KatalystLoads(cp, layout)) == std::set<std::string>{"kat-a", "kat-b", "kat-c"});

    // 3. The kubelet works with netqos: a pod comes, one goes. Both only in the journal.
    AllocateShared(h, "nq-d", 1000);
    RemovePod(h, "kat-b");
    CHECK_FALSE(Journal(h.state_dir()).empty());

    // 4. An --uninstall while the daemon runs must not write under it.
    const std::string before = t::ReadFile(cp);
    const std::vector<std::string> uninstall = h.UninstallArgv(flags);
    auto refused = t::RunCommand(uninstall, h.root() + "/uninstall-refused.log");
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.output, Catch::Contains("in use by another netqosd"));
    CHECK(t::ReadFile(cp) == before);

    // 5. The worst way out: kill -9. Katalyst would load the last snapshot, without steps 3.
    REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
    CHECK(Pods(KatalystLoads(cp, layout)) == std::set<std::string>{"kat-a", "kat-b", "kat-c"});

    // 6. The rollback step of the guide: --uninstall folds the journal into the snapshot.
    auto folded = t::RunCommand(uninstall, h.root() + "/uninstall.log");
    INFO(folded.output);
    REQUIRE(folded.exit_code == 0);
    CHECK(Journal(h.state_dir()).empty());
    json katalyst = KatalystLoads(cp, layout);
    CHECK(Pods(katalyst) == std::set<std::string>{"kat-a", "kat-c", "nq-d"});
    CHECK(katalyst["pod_entries"]["nq-d"]["main"]["if_name"] == "eth0");
    CHECK(katalyst["pod_entries"]["nq-d"]["main"]["egress"] == 1000);

    // 7. Katalyst runs again and writes its own checkpoint: kat-a has gone meanwhile.
    json edited = json::parse(t::ReadFile(cp));
    edited["pod_entries"].erase("kat-a");
    t::WriteFile(cp, edited.dump());
    REQUIRE(t::GoTool::Get().Run({"-layout", layout, "-sign", cp}).exit_code == 0);

    // 8. And netqos once more: Katalyst's file is the truth, nothing of netqos's past returns.
    h.ResetDaemon();
    h.Start(flags);
    CHECK(Status(h)["pods"] == 2);
    CHECK(Status(h)["allocated_egress_mbps"] == 5000);
    CHECK(NicOf(h, "nq-d") == "eth0");
    // 9. A graceful stop leaves a snapshot Katalyst loads, and no journal.
    RemovePod(h, "kat-c");
    REQUIRE(h.daemon().Stop(SIGTERM) == 0);
    CHECK(Journal(h.state_dir()).empty());
    CHECK(Pods(KatalystLoads(cp, layout)) == std::set<std::string>{"nq-d"});
  }
}

}  // namespace
}  // namespace netqos::e2e
