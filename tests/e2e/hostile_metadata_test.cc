// A tenant writes its pod's annotations, and the kept ones are copied into every entry of the
// checkpoint. With the real netqosd in both checkpoint modes: a pod whose kept metadata passes
// --checkpoint-pod-metadata-bytes is refused by name; pods just under it fill the state up to
// --checkpoint-max-state-bytes and no further; and through all of it snapshots are written,
// a restart loads them, RemovePod makes room again and --uninstall folds a file that Katalyst
// loads (the last with the Go reference of Katalyst's checkpoint).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/files.h"
#include "support/katalyst_go_tool.h"

namespace netqos::e2e {
namespace {

namespace t = netqos::testing;
using nlohmann::json;

constexpr char kAggregatedKey[] = "pod.kubernetes.io/pod-aggregated-requests";
constexpr size_t kPodLimit = 16384;
constexpr size_t kStateLimit = size_t{1} << 20;
// Under the per-pod limit with the request's other kept metadata (the QoS level, a few bytes).
constexpr size_t kFillerBytes = 15000;

std::vector<std::string> BoundedFlags(const std::string& mode) {
  std::vector<std::string> flags = FixtureFlags();
  flags.push_back("--checkpoint-pod-metadata-bytes=" + std::to_string(kPodLimit));
  flags.push_back("--checkpoint-max-state-bytes=" + std::to_string(kStateLimit));
  flags.push_back("--checkpoint-snapshot-every=4");
  flags.push_back("--checkpoint-mode=" + mode);
  return flags;
}

grpc::Status AllocateWith(Harness& h, const std::string& uid, size_t annotation_bytes) {
  auto req = Req::Container(uid, rp::MAIN, "shared_cores", 1);
  Req::NamespaceType(&req, "host_ns");
  (*req.mutable_annotations())[kAggregatedKey] = std::string(annotation_bytes, 'x');
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  return h.Plugin()->Allocate(&ctx, req, &resp);
}

bool Holds(Harness& h, const std::string& uid) {
  rp::GetTopologyAwareResourcesRequest q;
  q.set_pod_uid(uid);
  q.set_container_name("test");
  grpc::ClientContext ctx;
  rp::GetTopologyAwareResourcesResponse resp;
  return h.Plugin()->GetTopologyAwareResources(&ctx, q, &resp).ok() &&
         resp.has_container_topology_aware_resources();
}

// Allocates pods at the filler size until the state is full; the uids taken.
std::vector<std::string> FillState(Harness& h) {
  std::vector<std::string> held;
  for (int i = 0; i < 200; ++i) {
    const std::string uid = "fill-" + std::to_string(i);
    grpc::Status st = AllocateWith(h, uid, kFillerBytes);
    if (!st.ok()) {
      INFO(st.error_message());
      CHECK(st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
      CHECK_THAT(st.error_message(),
                 Catch::Contains("no room in the checkpoint for pod test/test (" + uid + ")"));
      break;
    }
    held.push_back(uid);
  }
  // The flag reader guarantees room for eight entries at the per-pod limit; one entry is counted
  // twice (it is written under its pod and under its NIC), so 2 x 15 KB each fill 1 MiB at ~33.
  CHECK(held.size() >= 8);
  CHECK(held.size() < 40);
  return held;
}

std::vector<std::string> JournalSegments(const Harness& h) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(h.state_dir())) {
    if (e.path().filename().string().find(".wal.") != std::string::npos) {
      out.push_back(e.path().string());
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "e2e: hostile pod metadata is refused by name, the state stops at its bound, and snapshots, "
    "restarts, RemovePod and --uninstall keep working") {
  const std::string mode = GENERATE(std::string("journal"), std::string("full-rewrite"));
  INFO("--checkpoint-mode=" << mode);
  Harness h;
  h.Start(BoundedFlags(mode));

  // 200 KiB of kept annotation: refused by name, nothing written for it.
  grpc::Status huge = AllocateWith(h, "huge", 200 * 1024);
  INFO(huge.error_message());
  CHECK(huge.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(huge.error_message(),
             Catch::Contains("over the limit of 16384") &&
                 Catch::Contains(std::string("annotation \"") + kAggregatedKey));
  CHECK_FALSE(Holds(h, "huge"));

  const std::vector<std::string> held = FillState(h);
  for (const std::string& uid : held) CHECK(Holds(h, uid));

  // Removing a pod makes room for another.
  {
    rp::RemovePodRequest rm;
    rm.set_pod_uid(held.front());
    grpc::ClientContext ctx;
    rp::RemovePodResponse rr;
    REQUIRE(h.Plugin()->RemovePod(&ctx, rm, &rr).ok());
  }
  grpc::Status after = AllocateWith(h, "after-remove", kFillerBytes);
  INFO(after.error_message());
  CHECK(after.ok());

  // A graceful stop writes the snapshot; it holds every entry and is under the bound.
  REQUIRE(h.daemon().Stop(SIGTERM) == 0);
  const uintmax_t bytes = std::filesystem::file_size(h.checkpoint_path());
  CHECK(bytes > 2 * held.size() * kFillerBytes);
  CHECK(bytes <= kStateLimit + 16 * 1024);

  // The restart loads it: every pod still held, the removed one gone, the bound still kept.
  h.Start(BoundedFlags(mode));
  for (size_t i = 1; i < held.size(); ++i) CHECK(Holds(h, held[i]));
  CHECK_FALSE(Holds(h, held.front()));
  CHECK(Holds(h, "after-remove"));
  CHECK(AllocateWith(h, "one-more", kFillerBytes).error_code() ==
        grpc::StatusCode::RESOURCE_EXHAUSTED);
  REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);

  // --uninstall folds what a kill -9 left in the journal into one snapshot with every pod.
  auto folded = t::RunCommand(h.UninstallArgv(BoundedFlags(mode)), h.root() + "/uninstall.log");
  INFO(folded.output);
  REQUIRE(folded.exit_code == 0);
  CHECK(JournalSegments(h).empty());
  const json doc = json::parse(t::ReadFile(h.checkpoint_path()));
  CHECK(doc["pod_entries"].size() == held.size());
  CHECK(doc["pod_entries"].contains("after-remove"));
}

TEST_CASE("e2e: Katalyst loads the checkpoint of a state filled to its bound by hostile metadata",
          "[.][katalyst_go]") {
  if (!t::GoToolAvailable()) return;
  Harness h;
  h.Start(BoundedFlags("journal"));
  const std::vector<std::string> held = FillState(h);
  REQUIRE(h.daemon().Stop(SIGKILL) == 128 + SIGKILL);
  auto folded =
      t::RunCommand(h.UninstallArgv(BoundedFlags("journal")), h.root() + "/uninstall.log");
  INFO(folded.output);
  REQUIRE(folded.exit_code == 0);
  auto run = t::GoTool::Get().Run({"-layout", "v0.5.3", "-verify", h.checkpoint_path()});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const json loaded = json::parse(run.output.substr(run.output.find('{')));
  CHECK(loaded["pod_entries"].size() == held.size());
}

}  // namespace netqos::e2e
