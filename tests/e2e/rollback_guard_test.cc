// The rollback guard on the state directory (userspace/common/format_stamp.h): netqosd stamps the
// directory with its format generation, and a netqosd older than what a stamp allows refuses to
// start and to uninstall before it reads or writes anything there, naming the newer release and
// the way back. The "newer netqosd" is played by its stamp: the real netqosd of this build reads
// the stamp a later generation would write (generation + 1, readable only from generation + 1).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "e2e/kubelet_harness.h"
#include "support/files.h"

namespace netqos::e2e {
namespace {

namespace t = netqos::testing;
using nlohmann::json;

std::string StampPath(const Harness& h) { return h.state_dir() + "/netqos_format.json"; }

// Every file of the state directory and its bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out[e.path().filename().string()] = t::ReadFile(e.path().string());
  }
  return out;
}

void WriteStamp(const Harness& h, uint64_t generation, uint64_t min_reader,
                const std::string& release) {
  t::WriteFile(
      StampPath(h),
      json{{"generation", generation}, {"min_reader", min_reader}, {"release", release}}.dump());
}

grpc::Status AllocateOne(Harness& h, const std::string& uid) {
  auto req = Req::Container(uid, rp::MAIN, "shared_cores", 1000);
  Req::NamespaceType(&req, "host_ns");
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  return h.Plugin()->Allocate(&ctx, req, &resp);
}

}  // namespace

TEST_CASE(
    "e2e: rollback guard: a state directory a newer netqosd stamped is refused, by the daemon and "
    "by --uninstall, before anything in it is read or written") {
  Harness h;
  h.Start();
  REQUIRE(AllocateOne(h, "p1").ok());
  // kill -9: the allocation is in the journal only, the state an older netqosd would misread.
  REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  const json own = json::parse(t::ReadFile(StampPath(h)));
  INFO(own.dump());
  REQUIRE(own["generation"].is_number_unsigned());
  REQUIRE(own["min_reader"].get<uint64_t>() <= own["generation"].get<uint64_t>());
  CHECK(own["release"].get<std::string>().rfind(NETQOS_VERSION_TEXT, 0) == 0);
  const uint64_t generation = own["generation"];

  WriteStamp(h, generation + 1, generation + 1, "9.9.9+future");
  const auto before = Files(h.state_dir());
  // kill -9 left its socket: gone, so that a serving netqosd would show by making a new one.
  std::filesystem::remove(h.socket_path());

  t::DaemonProcess refused(h.DaemonArgv(FixtureFlags()), h.log_path());
  CHECK(refused.WaitExit() == 1);
  const std::string log = refused.Log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("the state directory " + h.state_dir()));
  CHECK_THAT(log, Catch::Contains("netqosd 9.9.9+future"));
  CHECK_THAT(log, Catch::Contains("generation " + std::to_string(generation + 1)));
  CHECK_THAT(log, Catch::Contains("netqosd --uninstall"));
  CHECK_FALSE(std::filesystem::exists(h.socket_path()));
  CHECK(Files(h.state_dir()) == before);

  auto uninstall =
      t::RunCommand(h.UninstallArgv(FixtureFlags()), h.root() + "/uninstall-refused.log");
  INFO(uninstall.output);
  CHECK(uninstall.exit_code == 1);
  CHECK_THAT(uninstall.output, Catch::Contains("uninstall refused"));
  CHECK_THAT(uninstall.output, Catch::Contains("netqosd 9.9.9+future"));
  CHECK(Files(h.state_dir()) == before);

  // A stamp that is not one stops the start too, naming the file (it is not guessed at).
  t::WriteFile(StampPath(h), "{\"generation\": \"two\"");
  t::DaemonProcess damaged(h.DaemonArgv(FixtureFlags()), h.log_path());
  CHECK(damaged.WaitExit() == 1);
  CHECK_THAT(damaged.Log(), Catch::Contains(StampPath(h)));
}

TEST_CASE(
    "e2e: rollback guard: stamps this netqosd may read are taken over, and --uninstall leaves "
    "none") {
  Harness h;
  h.Start();
  REQUIRE(AllocateOne(h, "p1").ok());
  REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  const json own = json::parse(t::ReadFile(StampPath(h)));
  const uint64_t generation = own["generation"];

  // A newer netqosd whose state this one still handles (it raised the generation, not
  // min_reader), and an older one's: both start, keep the allocation, and get this one's stamp.
  for (const auto& [g, min] : std::vector<std::pair<uint64_t, uint64_t>>{
           {generation + 1, generation}, {generation - 1, generation - 1}}) {
    INFO("stamp generation " << g << ", min_reader " << min);
    WriteStamp(h, g, min, "other");
    h.ResetDaemon();
    h.Start();
    grpc::ClientContext ctx;
    rp::GetTopologyAwareResourcesRequest q;
    q.set_pod_uid("p1");
    q.set_container_name("test");
    rp::GetTopologyAwareResourcesResponse tr;
    CHECK(h.Plugin()->GetTopologyAwareResources(&ctx, q, &tr).ok());
    CHECK(tr.has_container_topology_aware_resources());
    CHECK(json::parse(t::ReadFile(StampPath(h))) == own);
    REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  }

  // The way back: this netqosd's --uninstall folds the journal and removes the stamp, so an
  // older netqosd (or Katalyst) finds a snapshot it reads and nothing that stops it.
  auto uninstall = t::RunCommand(h.UninstallArgv(FixtureFlags()), h.root() + "/uninstall.log");
  INFO(uninstall.output);
  CHECK(uninstall.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(StampPath(h)));
  CHECK(std::filesystem::exists(h.checkpoint_path()));
}

}  // namespace netqos::e2e
