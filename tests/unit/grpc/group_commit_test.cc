// Group commit in AllocationService: the journal flush of a change runs outside the service lock
// (so other calls go on, and concurrent changes share one flush), a call is acknowledged only
// after its flush, and a failed flush stops the service. Through the StateStore port, with a
// store whose flush the test holds and releases.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/nic_chooser.h"
#include "core/policy.h"
#include "core/state_store.h"
#include "service/allocation_service.h"
#include "service_fixture.h"

namespace netqos::service {
namespace {

using Catch::Contains;
using namespace std::chrono_literals;

// Write records at once; Sync waits until the test releases the flush (or fails it).
class HeldFlushStore final : public core::StateStore {
 public:
  Result<core::LoadedState> Load() override { return core::LoadedState{}; }
  Status Append(const core::StateChange& change) override {
    auto seq = Write(change);
    return seq.ok() ? Sync(*seq) : seq.status();
  }
  Result<uint64_t> Write(const core::StateChange&) override {
    std::lock_guard lk(mu_);
    return ++written_;
  }
  Status Sync(uint64_t seq) override {
    std::unique_lock lk(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lk, [&] { return released_ >= seq || !fail_.ok(); });
    --waiting_;
    if (released_ >= seq) return Status::Ok();
    return Status(fail_.code(), fail_.message() + " (record " + std::to_string(seq) + ")");
  }
  bool SnapshotDue() const override { return false; }
  Result<uint64_t> BeginSnapshot() override {
    std::lock_guard lk(mu_);
    return written_;
  }
  Status FinishSnapshot(uint64_t, const core::Snapshot&) override { return Status::Ok(); }

  // Test side.
  void Release(uint64_t up_to) {
    std::lock_guard lk(mu_);
    released_ = up_to;
    cv_.notify_all();
  }
  void Fail(Status st) {
    std::lock_guard lk(mu_);
    fail_ = std::move(st);
    cv_.notify_all();
  }
  bool WaitForWaiters(int n) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, 10s, [&] { return waiting_ >= n; });
  }
  uint64_t written() {
    std::lock_guard lk(mu_);
    return written_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t written_ = 0;
  uint64_t released_ = 0;  // the start-up snapshot needs no Sync
  int waiting_ = 0;
  Status fail_;
};

struct Fixture {
  Fixture() {
    auto owned = std::make_unique<HeldFlushStore>();
    store = owned.get();
    auto policy = core::StaticPolicy::Create(core::PolicyConfig{}, testing::FixtureTopology());
    REQUIRE(policy.ok());
    auto svc = AllocationService::Create(std::move(policy).value(), std::move(owned),
                                         std::make_unique<core::FirstNicChooser>());
    REQUIRE(svc.ok());
    service = std::move(svc).value();
  }
  HeldFlushStore* store = nullptr;  // owned by service
  std::unique_ptr<AllocationService> service;
};

core::ContainerRequest Request(const std::string& uid) {
  core::ContainerRequest r;
  r.pod_uid = uid;
  r.pod_namespace = "default";
  r.pod_name = uid;
  r.container_name = "main";
  r.container_type = core::ContainerType::kMain;
  r.resource_name = "resource.katalyst.kubewharf.io/net_bandwidth";
  r.resource_requests[r.resource_name] = 100;
  r.annotations["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  r.labels["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  return r;
}

TEST_CASE("group commit: a change waits for its flush outside the service lock", "[group_commit]") {
  Fixture f;
  auto first = std::async(std::launch::async, [&] { return f.service->Allocate(Request("a")); });
  REQUIRE(f.store->WaitForWaiters(1));
  // The first Allocate is written and waits for the disk; the service still answers...
  auto hints =
      std::async(std::launch::async, [&] { return f.service->GetTopologyHints(Request("b")); });
  REQUIRE(hints.wait_for(5s) == std::future_status::ready);
  CHECK(hints.get().ok());
  // ... and a second change is written meanwhile, to share the next flush.
  auto second = std::async(std::launch::async, [&] { return f.service->Allocate(Request("c")); });
  REQUIRE(f.store->WaitForWaiters(2));
  CHECK(f.store->written() == 2);
  // Nothing is acknowledged before its flush.
  CHECK(first.wait_for(100ms) == std::future_status::timeout);
  CHECK(second.wait_for(0ms) == std::future_status::timeout);
  f.store->Release(2);
  CHECK(first.get().ok());
  CHECK(second.get().ok());
  CHECK(f.service->PersistenceStatus().ok());
}

TEST_CASE("group commit: a failed flush stops the service until a restart", "[group_commit]") {
  Fixture f;
  auto change = std::async(std::launch::async, [&] { return f.service->Allocate(Request("a")); });
  REQUIRE(f.store->WaitForWaiters(1));
  f.store->Fail(Internal("fdatasync(/state/network_plugin_state.wal.1): Input/output error"));
  auto refused = change.get();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(refused.status().message(), Contains("Input/output error"));
  CHECK_THAT(refused.status().message(), Contains("until it is restarted"));
  // The state in memory may hold what the disk lost: every call is refused, reads included.
  CHECK(f.service->PersistenceStatus().code() == StatusCode::kUnavailable);
  CHECK(f.service->GetTopologyHints(Request("b")).status().code() == StatusCode::kUnavailable);
  CHECK(f.service->GetTopologyAwareResources("a", "main").status().code() ==
        StatusCode::kUnavailable);
  CHECK(f.service->RemovePod("a").code() == StatusCode::kUnavailable);
  CHECK(f.store->written() == 1);  // nothing more reaches the journal
}

TEST_CASE("group commit: each call failed by a flush gets its own record's error",
          "[group_commit]") {
  Fixture f;
  auto first = std::async(std::launch::async, [&] { return f.service->Allocate(Request("a")); });
  REQUIRE(f.store->WaitForWaiters(1));
  auto second = std::async(std::launch::async, [&] { return f.service->Allocate(Request("c")); });
  REQUIRE(f.store->WaitForWaiters(2));
  f.store->Fail(Internal("fdatasync(/state/network_plugin_state.wal.1): Input/output error"));
  auto a = first.get();
  auto c = second.get();
  REQUIRE_FALSE(a.ok());
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(a.status().message(), Contains("(record 1)"));
  CHECK_THAT(c.status().message(), Contains("(record 2)"));
  CHECK_THAT(c.status().message(), Contains("until it is restarted"));
  // Calls after the failure are refused with the first error.
  CHECK(f.service->PersistenceStatus().code() == StatusCode::kUnavailable);
  CHECK_THAT(f.service->RemovePod("a").message(), Contains("Input/output error"));
}

}  // namespace
}  // namespace netqos::service
