// --checkpoint-mode=full-rewrite (AllocationService::Durability::kFullRewrite), the baseline of
// bench/control_plane_bench: every change rewrites the whole checkpoint through the real
// FileStateStore and journals nothing; a failed rewrite leaves the state exactly as it was.
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "checkpoint/file_state_store.h"
#include "core/constants.h"
#include "service/allocation_service.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "unit/grpc/service_fixture.h"

namespace {

using netqos::service::AllocationService;

netqos::core::ContainerRequest Request(const std::string& uid, const std::string& container) {
  netqos::core::ContainerRequest r;
  r.pod_uid = uid;
  r.pod_namespace = "ns";
  r.pod_name = "web";
  r.container_name = container;
  r.resource_name = netqos::core::kResourceName;
  r.resource_requests[netqos::core::kResourceName] = 100;
  r.annotations["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  return r;
}

std::unique_ptr<AllocationService> MakeService(std::unique_ptr<netqos::core::StateStore> store) {
  auto policy = netqos::core::StaticPolicy::Create(netqos::core::PolicyConfig{},
                                                   netqos::testing::FixtureTopology());
  REQUIRE(policy.ok());
  auto svc = AllocationService::Create(std::move(policy).value(), std::move(store),
                                       std::make_unique<netqos::core::FirstNicChooser>(),
                                       AllocationService::Durability::kFullRewrite);
  REQUIRE(svc.ok());
  return std::move(svc).value();
}

std::unique_ptr<netqos::checkpoint::FileStateStore> FileStore(const std::string& dir) {
  netqos::checkpoint::FileStateStore::Options o;
  o.dir = dir;
  auto store = netqos::checkpoint::FileStateStore::Create(o);
  REQUIRE(store.ok());
  return std::move(store).value();
}

size_t JournalSegments(const std::string& dir) {
  size_t n = 0;
  for (const auto& name : netqos::testing::ListDir(dir)) {
    if (name.find(".wal.") != std::string::npos) ++n;
  }
  return n;
}

// Counts what the service asks of the store; FinishSnapshot fails once `fail` is set.
class ScriptedStore final : public netqos::core::StateStore {
 public:
  netqos::Result<netqos::core::LoadedState> Load() override { return netqos::core::LoadedState{}; }
  netqos::Status Append(const netqos::core::StateChange&) override {
    ++appends;
    return netqos::Status::Ok();
  }
  bool SnapshotDue() const override { return false; }
  netqos::Result<uint64_t> BeginSnapshot() override { return uint64_t{1}; }
  netqos::Status FinishSnapshot(uint64_t, const netqos::core::Snapshot&) override {
    ++snapshots;
    if (*fail) return netqos::Status(netqos::StatusCode::kInternal, "fsync(disk): EIO");
    return netqos::Status::Ok();
  }
  int appends = 0;
  int snapshots = 0;
  std::shared_ptr<bool> fail = std::make_shared<bool>(false);
};

}  // namespace

TEST_CASE("full-rewrite mode rewrites the checkpoint on every change and journals nothing") {
  netqos::testing::TempDir dir;
  const std::string checkpoint = dir.file(netqos::core::kCheckpointFileName);
  {
    auto svc = MakeService(FileStore(dir.path()));
    REQUIRE(svc->Allocate(Request("pod-a", "app")).ok());
    CHECK(netqos::testing::ReadFile(checkpoint).find("pod-a") != std::string::npos);
    REQUIRE(svc->Allocate(Request("pod-b", "app")).ok());
    REQUIRE(svc->RemovePod("pod-a").ok());
    const std::string text = netqos::testing::ReadFile(checkpoint);
    CHECK(text.find("pod-a") == std::string::npos);
    CHECK(text.find("pod-b") != std::string::npos);
    CHECK(JournalSegments(dir.path()) == 0);
  }
  // The file alone restores the state, in either mode.
  auto store = FileStore(dir.path());
  auto loaded = store->Load();
  REQUIRE(loaded.ok());
  CHECK(loaded->pod_entries.count("pod-a") == 0);
  CHECK(loaded->pod_entries.count("pod-b") == 1);
}

TEST_CASE("full-rewrite mode: a failed rewrite is an error and leaves the state as it was") {
  auto owned = std::make_unique<ScriptedStore>();
  ScriptedStore* store = owned.get();
  auto fail = store->fail;
  auto svc = MakeService(std::move(owned));
  REQUIRE(svc->Allocate(Request("pod-a", "app")).ok());
  REQUIRE(svc->Allocate(Request("pod-a", "sidecar")).ok());
  const auto before = svc->Snapshot();

  *fail = true;
  CHECK_FALSE(svc->Allocate(Request("pod-a", "third")).ok());  // a new container of a known pod
  CHECK_FALSE(svc->Allocate(Request("pod-c", "app")).ok());    // a new pod
  CHECK_FALSE(svc->RemovePod("pod-a").ok());
  const auto after = svc->Snapshot();
  CHECK(after.pod_entries == before.pod_entries);
  CHECK(after.machine_state == before.machine_state);
  CHECK(store->appends == 0);

  *fail = false;
  REQUIRE(svc->RemovePod("pod-a").ok());
  CHECK(svc->Snapshot().pod_entries.empty());
}
