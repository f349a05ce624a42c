// ClassSync against an in-memory ClassTable: what is set, what is cleared at once, what is kept
// for the residual grace period (as Katalyst HEAD's clearResidualState), and how write errors are
// reported.
#include "enforce/class_sync.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "enforce/class_table.h"
#include "support/observed_container.h"
#include "unit/enforce/fake_tables.h"

namespace {

using Catch::Contains;
using netqos::Result;
using netqos::Status;
using netqos::enforce::ClassEntry;
using netqos::enforce::ClassSync;
using netqos::enforce::ClassTable;
using netqos::enforce::Clock;
using netqos::enforce::DesiredContainer;
using netqos::enforce::SyncInputs;
using netqos::enforce::SyncReport;
using std::chrono::minutes;
using std::chrono::seconds;

using FakeTable = netqos::enforce::testing::FakeClassTable;

ClassEntry E(uint32_t priority, uint32_t net_class_id = 0, uint8_t level = 2) {
  return ClassEntry{priority, net_class_id, level};
}

std::map<uint64_t, DesiredContainer> Want(const std::map<uint64_t, ClassEntry>& entries) {
  std::map<uint64_t, DesiredContainer> out;
  for (const auto& [id, e] : entries) {
    DesiredContainer d;
    d.entry = e;
    d.pod = netqos::testing::PodMetaOf("", "ns", "pod" + std::to_string(id));
    d.container_name = "c";
    out[id] = d;
  }
  return out;
}

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1000);

// One sync against the table's current content.
struct Pass {
  std::map<uint64_t, ClassEntry> desired;
  std::set<uint64_t> live;
  bool pods_known = true;
  std::set<uint64_t> evict;
  Clock::time_point now = t0;
  bool no_liveness = false;  // the cgroup tree could not be listed

  SyncReport Run(ClassSync& sync, FakeTable& table) const {
    const auto want = Want(desired);
    SyncInputs in;
    in.desired = &want;
    in.live_cgroups = no_liveness ? nullptr : &live;
    in.pods_known = pods_known;
    in.evict_now = &evict;
    in.now = now;
    const auto current = table.entries;
    table.sets.clear();
    table.clears.clear();
    return sync.Sync(table, current, in);
  }
};

using Ids = std::vector<uint64_t>;

}  // namespace

TEST_CASE("sync sets only the entries that differ", "[enforce]") {
  FakeTable table;
  table.entries = {{1, E(0x100100, 5, 2)},
                   {2, E(0x100031, 0, 2)},
                   {3, E(0x100021, 0, 1)},
                   {4, E(0x100041, 0, 3)}};
  ClassSync sync;
  Pass p;
  p.desired = {{1, E(0x100100, 5, 2)},   // unchanged
               {2, E(0x100101, 0, 2)},   // priority changed
               {3, E(0x100021, 9, 1)},   // class id changed
               {4, E(0x100041, 0, 2)},   // level changed
               {5, E(0x100031, 0, 2)}};  // new
  p.live = {1, 2, 3, 4, 5};
  const SyncReport r = p.Run(sync, table);
  CHECK(table.sets == Ids{2, 3, 4, 5});
  CHECK(table.clears.empty());
  CHECK(r.set == 4);
  CHECK(r.cleared == 0);
  CHECK(r.kept_in_grace == 0);
  CHECK(r.errors.empty());
  CHECK(table.entries == p.desired);

  // Nothing changed: nothing written.
  const SyncReport again = p.Run(sync, table);
  CHECK(table.sets.empty());
  CHECK(again.set == 0);
}

TEST_CASE("entries whose cgroup is gone are cleared at once", "[enforce]") {
  for (bool pods_known : {false, true}) {
    INFO("pods_known " << pods_known);
    FakeTable table;
    table.entries = {{1, E(1)}, {2, E(2)}, {3, E(3)}};
    ClassSync sync;
    sync.Adopt(table.entries, t0);  // even inside the grace period
    Pass p;
    p.desired = {{1, E(1)}};
    p.live = {1, 2};
    p.pods_known = pods_known;
    p.now = t0 + seconds(1);
    const SyncReport r = p.Run(sync, table);
    CHECK(table.clears == Ids{3});
    CHECK(r.cleared == 1);
    CHECK(r.kept_in_grace == 1);  // 2 is alive
    CHECK(table.entries.count(2) == 1);
    CHECK(table.entries.count(3) == 0);
  }
}

TEST_CASE("entries of removed pods are cleared at once", "[enforce]") {
  FakeTable table;
  table.entries = {{1, E(1)}, {2, E(2)}};
  ClassSync sync;
  Pass wanted;
  wanted.desired = table.entries;
  wanted.live = {1, 2};
  (void)wanted.Run(sync, table);

  Pass p;
  p.live = {1, 2};
  p.pods_known = false;  // even without a pod list
  p.evict = {2};
  p.now = t0 + seconds(1);
  const SyncReport r = p.Run(sync, table);
  CHECK(table.clears == Ids{2});
  CHECK(r.cleared == 1);
  CHECK(r.kept_in_grace == 1);
  CHECK(table.entries.count(1) == 1);

  // An entry that is still desired is never evicted.
  Pass desired_and_evicted;
  desired_and_evicted.desired = {{1, E(1)}};
  desired_and_evicted.live = {1};
  desired_and_evicted.evict = {1};
  const SyncReport r2 = desired_and_evicted.Run(sync, table);
  CHECK(table.clears.empty());
  CHECK(r2.cleared == 0);
}

TEST_CASE("without a pod list nothing alive is judged residual", "[enforce]") {
  FakeTable table;
  table.entries = {{1, E(1)}, {2, E(2)}};
  ClassSync sync(seconds(60));
  Pass p;
  p.live = {1, 2};
  p.pods_known = false;
  p.now = t0 + std::chrono::hours(24);  // long after any grace period; never wanted at all
  const SyncReport r = p.Run(sync, table);
  CHECK(table.clears.empty());
  CHECK(r.kept_in_grace == 2);
  CHECK(table.entries.size() == 2);

  // The cgroup tree could not be listed either: still kept.
  p.no_liveness = true;
  const SyncReport r2 = p.Run(sync, table);
  CHECK(table.clears.empty());
  CHECK(r2.kept_in_grace == 2);
}

TEST_CASE("a live residual entry is kept for the grace period after it was last wanted",
          "[enforce]") {
  struct Row {
    seconds after_last_wanted;
    bool cleared;
  };
  const Row rows[] = {{seconds(0), false}, {seconds(1), false}, {seconds(59), false},
                      {seconds(60), true}, {seconds(61), true}, {seconds(3600), true}};
  for (const auto& row : rows) {
    INFO("after " << row.after_last_wanted.count() << " s");
    FakeTable table;
    ClassSync sync(seconds(60));
    Pass wanted;
    wanted.desired = {{7, E(0x100100)}, {8, E(0x100031)}};
    wanted.live = {7, 8};
    wanted.now = t0;
    (void)wanted.Run(sync, table);
    REQUIRE(table.entries.size() == 2);

    // 7 is still wanted at t0+10s, 8 is not wanted after t0.
    Pass still;
    still.desired = {{7, E(0x100100)}};
    still.live = {7, 8};
    still.now = t0 + seconds(10);
    (void)still.Run(sync, table);

    Pass later;
    later.live = {7, 8};
    later.now = t0 + seconds(10) + row.after_last_wanted;
    const SyncReport r = later.Run(sync, table);
    CHECK((table.entries.count(7) == 0) == row.cleared);
    // 8 was last wanted 10 s earlier than 7.
    const bool eight_cleared = row.after_last_wanted + seconds(10) >= seconds(60);
    CHECK((table.entries.count(8) == 0) == eight_cleared);
    CHECK(r.cleared == static_cast<int>(row.cleared) + static_cast<int>(eight_cleared));
    CHECK(r.kept_in_grace == 2 - r.cleared);
  }
}

TEST_CASE("a live entry never wanted by this daemon is cleared once pods are known", "[enforce]") {
  FakeTable table;
  table.entries = {{1, E(1)}};
  ClassSync sync;
  Pass p;
  p.live = {1};
  const SyncReport r = p.Run(sync, table);
  CHECK(table.clears == Ids{1});
  CHECK(r.cleared == 1);
  CHECK(table.entries.empty());
}

TEST_CASE("adopted startup entries count as wanted at adopt time", "[enforce]") {
  FakeTable table;
  table.entries = {{1, E(1)}, {2, E(2)}};
  ClassSync sync(minutes(30));
  sync.Adopt(table.entries, t0);

  Pass p;
  p.live = {1, 2};
  p.now = t0 + minutes(29);
  const SyncReport kept = p.Run(sync, table);
  CHECK(table.clears.empty());
  CHECK(kept.kept_in_grace == 2);

  p.now = t0 + minutes(30);
  const SyncReport cleared = p.Run(sync, table);
  CHECK(table.clears == Ids{1, 2});
  CHECK(cleared.cleared == 2);
  CHECK(table.entries.empty());
}

TEST_CASE("adopting does not move back a later last-wanted time", "[enforce]") {
  FakeTable table;
  ClassSync sync(minutes(30));
  Pass wanted;
  wanted.desired = {{1, E(1)}};
  wanted.live = {1};
  wanted.now = t0 + minutes(20);
  (void)wanted.Run(sync, table);
  sync.Adopt(table.entries, t0);

  Pass p;
  p.live = {1};
  p.now = t0 + minutes(40);  // 40 min after the adopt time, 20 after it was last wanted
  const SyncReport r = p.Run(sync, table);
  CHECK(table.clears.empty());
  CHECK(r.kept_in_grace == 1);
}

TEST_CASE("no grace when the map holds at least no_grace_above entries", "[enforce]") {
  struct Row {
    size_t no_grace_above;
    bool cleared;
  };
  const Row rows[] = {{2, true}, {3, true}, {4, false}, {100, false}};
  for (const auto& row : rows) {
    INFO("no_grace_above " << row.no_grace_above);
    FakeTable table;
    ClassSync sync(minutes(30), row.no_grace_above);
    Pass wanted;
    wanted.desired = {{1, E(1)}, {2, E(2)}, {3, E(3)}};
    wanted.live = {1, 2, 3};
    (void)wanted.Run(sync, table);

    Pass p;
    p.desired = {{1, E(1)}};
    p.live = {1, 2, 3};
    p.now = t0 + seconds(1);
    const SyncReport r = p.Run(sync, table);
    CHECK((table.clears == Ids{2, 3}) == row.cleared);
    CHECK(r.cleared == (row.cleared ? 2 : 0));
    CHECK(r.kept_in_grace == (row.cleared ? 0 : 2));
    CHECK(table.entries.count(1) == 1);
  }
}

TEST_CASE("write errors name the cgroup and do not stop the other entries", "[enforce]") {
  FakeTable table;
  table.entries = {{5, E(5)}, {6, E(6)}};
  table.fail_set = {2};
  table.fail_clear = {5};
  ClassSync sync;
  Pass p;
  p.desired = {{1, E(1)}, {2, E(2)}, {3, E(3)}};
  p.live = {1, 2, 3};  // 5 and 6 are gone
  const SyncReport r = p.Run(sync, table);
  CHECK(table.sets == Ids{1, 2, 3});
  CHECK(table.clears == Ids{5, 6});
  CHECK(r.set == 2);
  CHECK(r.cleared == 1);
  REQUIRE(r.errors.size() == 2);
  CHECK(r.failed_ids == std::vector<uint64_t>{2, 5});
  CHECK(r.errors[0].code() == netqos::StatusCode::kInternal);
  CHECK_THAT(r.errors[0].message(), Contains("set class of cgroup 2") &&
                                        Contains("ns/pod2 container c") && Contains("E2BIG"));
  CHECK_THAT(r.errors[1].message(), Contains("clear class of cgroup 5") && Contains("EPERM"));
  CHECK(table.entries == std::map<uint64_t, ClassEntry>{{1, E(1)}, {3, E(3)}, {5, E(5)}});

  // The next pass retries both.
  table.fail_set.clear();
  table.fail_clear.clear();
  const SyncReport retry = p.Run(sync, table);
  CHECK(table.sets == Ids{2});
  CHECK(table.clears == Ids{5});
  CHECK(retry.errors.empty());
  CHECK(table.entries == std::map<uint64_t, ClassEntry>{{1, E(1)}, {2, E(2)}, {3, E(3)}});
}
