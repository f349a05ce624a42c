// FileStateStore's group commit (Write, then Sync) on real files: what Sync waits for, a segment
// sealed between the two, and many threads appending at once.
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/file_state_store.h"
#include "support/checkpoint_store.h"
#include "support/temp_dir.h"
#include "unit/checkpoint/loaded_store.h"

namespace netqos::checkpoint {
namespace {

using testing::SetFor;

std::unique_ptr<FileStateStore> Opened(const std::string& dir,
                                       core::LoadedState* loaded = nullptr) {
  FileStateStore::Options options;
  options.dir = dir;
  return LoadedStoreWith(std::move(options), loaded);
}

TEST_CASE("group flush: Write numbers the records and Sync returns once they are flushed",
          "[group_flush]") {
  netqos::testing::TempDir tmp;
  auto store = Opened(tmp.path());
  auto a = store->Write(SetFor("a", "c"));
  auto b = store->Write(SetFor("b", "c"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == 1);
  CHECK(*b == 2);
  CHECK(store->Sync(*b).ok());  // one flush covers both
  CHECK(store->Sync(*a).ok());
  CHECK(store->Sync(0).ok());
  store.reset();
  core::LoadedState loaded;
  Opened(tmp.path(), &loaded);
  CHECK(loaded.pod_entries.size() == 2);
}

TEST_CASE("group flush: each flush is counted with the records it made durable and its time",
          "[group_flush]") {
  netqos::testing::TempDir tmp;
  auto store = Opened(tmp.path());
  CHECK(store->Flushes().records.count() == 0);
  uint64_t last = 0;
  for (const char* uid : {"a", "b", "c"}) {
    auto seq = store->Write(SetFor(uid, "c"));
    REQUIRE(seq.ok());
    last = *seq;
  }
  REQUIRE(store->Sync(last).ok());  // one flush for three records
  auto one = store->Write(SetFor("d", "c"));
  REQUIRE(one.ok());
  REQUIRE(store->Sync(*one).ok());
  REQUIRE(store->Sync(*one).ok());  // already durable: no flush

  const core::FlushStats stats = store->Flushes();
  CHECK(stats.records.bounds == FlushRecordBounds());
  CHECK(stats.records.count() == 2);
  CHECK(stats.records.sum == 4);
  CHECK(stats.records.buckets[BucketIndex(stats.records.bounds, 3)] == 1);  // le 4
  CHECK(stats.records.buckets[0] == 1);                                     // le 1
  CHECK(stats.seconds.count() == 2);
  CHECK(stats.seconds.sum > 0);
}

TEST_CASE("group flush: a segment sealed between Write and Sync is flushed by the seal",
          "[group_flush]") {
  netqos::testing::TempDir tmp;
  auto store = Opened(tmp.path());
  auto seq = store->Write(SetFor("a", "c"));
  REQUIRE(seq.ok());
  auto covered = store->BeginSnapshot();  // closes the segment the record is in
  REQUIRE(covered.ok());
  CHECK(*covered == *seq);
  CHECK(store->Sync(*seq).ok());
  // The next record goes to a new segment and is flushed through it.
  auto next = store->Write(SetFor("b", "c"));
  REQUIRE(next.ok());
  CHECK(store->Sync(*next).ok());
  store.reset();
  core::LoadedState loaded;
  Opened(tmp.path(), &loaded);
  CHECK(loaded.pod_entries.size() == 2);
}

TEST_CASE("group flush: threads appending at once all get durable, distinct records",
          "[group_flush]") {
  netqos::testing::TempDir tmp;
  auto store = Opened(tmp.path());
  constexpr int kThreads = 8;
  constexpr int kEach = 40;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string uid = "pod-" + std::to_string(t) + "-" + std::to_string(i);
        if (!store->Append(SetFor(uid, "c")).ok()) ++failures[static_cast<size_t>(t)];
        // Now and then a snapshot seals the segment under the appenders.
        if (t == 0 && i % 10 == 9) {
          auto seq = store->BeginSnapshot();
          if (!seq.ok()) ++failures[0];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);
  // Overlapping callers shared flushes (each Append flushed on its own before group commit).
  INFO(store->Flushes().records.count() << " flushes for " << kThreads * kEach << " records");
  const core::FlushStats stats = store->Flushes();
  CHECK(stats.records.count() < static_cast<uint64_t>(kThreads * kEach));
  // No record is made durable twice (a segment sealed by a snapshot is flushed by the seal and
  // counted by no flush).
  CHECK(stats.records.sum <= kThreads * kEach);
  CHECK(stats.records.sum > 0);
  store.reset();
  core::LoadedState loaded;
  Opened(tmp.path(), &loaded);
  CHECK(loaded.pod_entries.size() == static_cast<size_t>(kThreads * kEach));
}

}  // namespace
}  // namespace netqos::checkpoint
