// The enforcer's event inbox on its own: what the event threads record, what a wake-up takes, and
// OnContainerStarting's barrier, with real threads where the waiting is the point.
#include "enforce/enforcer_inbox.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "unit/enforce/runtime_pod_fixtures.h"

namespace {

using netqos::enforce::ContainerIndex;
using netqos::enforce::EnforcerInbox;
using netqos::enforce::InboxEvents;
using netqos::pods::ContainerInfo;
using netqos::pods::PodInfo;
using Clock = EnforcerInbox::Clock;
using std::chrono::milliseconds;

// An index of the worker's pod list in which `ids` are listed (where does not matter here).
std::shared_ptr<const ContainerIndex> Index(const std::vector<std::string>& ids) {
  auto index = std::make_shared<ContainerIndex>();
  for (size_t i = 0; i < ids.size(); ++i) (*index)[ids[i]] = {i, 0};
  return index;
}

PodInfo Pod(const std::string& uid) { return netqos::enforce::testing::RuntimePodOf(uid); }
ContainerInfo Container(const std::string& name, const std::string& id) {
  return netqos::enforce::testing::RuntimeContainerOf(name, id);
}

bool Empty(const InboxEvents& e) {
  return e.created.empty() && e.allocated.empty() && !e.refresh_pods && !e.general;
}

// Whether `f` is still not ready after `wait`: a waiter that must not have been released yet.
template <typename T>
bool StillWaiting(std::future<T>& f, milliseconds wait = milliseconds(100)) {
  return f.wait_for(wait) == std::future_status::timeout;
}

}  // namespace

TEST_CASE("enforcer inbox: events recorded before a take are all taken, once") {
  EnforcerInbox inbox;
  inbox.PublishIndex(Index({"c1", "c2"}));
  inbox.RecordContainerCreated("c1");
  inbox.RecordContainerCreated("c2");
  inbox.RecordContainerCreated("c1");  // a repeat is kept: the wake-up skips what it has placed
  inbox.RecordAllocated("u1");
  inbox.RecordAllocated("u2");
  inbox.RecordAllocated("u1");

  const InboxEvents first = inbox.Take();
  CHECK(first.created == std::vector<std::string>{"c1", "c2", "c1"});
  CHECK(first.allocated == std::set<std::string>{"u1", "u2"});
  CHECK_FALSE(first.refresh_pods);  // every id was known
  CHECK_FALSE(first.general);       // containers and allocations alone need no whole pass
  CHECK(Empty(inbox.Take()));
}

TEST_CASE("enforcer inbox: flags of many events make one take") {
  EnforcerInbox inbox;
  inbox.RecordGeneral();
  inbox.RecordGeneral();
  inbox.RecordPodRemoved("u1", Clock::now());
  inbox.RuntimePodRemoved("u2");
  const InboxEvents first = inbox.Take();
  CHECK(first.general);
  CHECK(first.refresh_pods);  // RuntimePodRemoved reads the pod list again
  CHECK(Empty(inbox.Take()));

  // What the runtime says of its pods and containers wakes nobody by itself.
  inbox.RuntimePod(Pod("u3"));
  inbox.RuntimeContainer(Pod("u3"), Container("app", "c3"));
  inbox.RuntimeContainerRemoved("u3", "c3");
  CHECK(Empty(inbox.Take()));
}

TEST_CASE("enforcer inbox: a container nobody knows yet is kept pending and the pod list read") {
  EnforcerInbox inbox;
  inbox.PublishIndex(Index({"c1"}));
  inbox.RecordContainerCreated("c9");
  const InboxEvents e = inbox.Take();
  CHECK(e.created.empty());
  CHECK(e.refresh_pods);
  CHECK(inbox.RetryPending() == 1);  // the pod list still lacks it

  inbox.PublishIndex(Index({"c1", "c9"}));  // the pod list now lists it
  CHECK(inbox.RetryPending() == 0);
  inbox.RecordContainerCreated("c9");
  CHECK(inbox.Take().created == std::vector<std::string>{"c9"});
}

TEST_CASE("enforcer inbox: a pending container is given up after its retries") {
  EnforcerInbox inbox;
  inbox.RecordContainerCreated("c9");
  for (int i = 0; i < EnforcerInbox::kPendingRetries; ++i) {
    INFO("retry " << i);
    REQUIRE(inbox.RetryPending() == 1);
  }
  CHECK(inbox.RetryPending() == 0);
}

TEST_CASE("enforcer inbox: a container the runtime told of is queued before the pod list has it") {
  EnforcerInbox inbox;
  inbox.RuntimeContainer(Pod("u1"), Container("app", "c1"));
  inbox.RecordContainerCreated("c1");
  const InboxEvents e = inbox.Take();
  CHECK(e.created == std::vector<std::string>{"c1"});
  CHECK_FALSE(e.refresh_pods);

  // Merged into the worker's list once, then only when the runtime says something new.
  std::vector<PodInfo> pods;
  CHECK(inbox.MergeRuntimePodsInto(pods, false).changed);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].containers.at(0).id == "c1");
  std::vector<PodInfo> again;
  CHECK_FALSE(inbox.MergeRuntimePodsInto(again, false).changed);
  CHECK(again.empty());
  CHECK(inbox.MergeRuntimePodsInto(again, true).changed);
  CHECK(again.size() == 1);

  // Forgotten by the runtime: unknown again.
  inbox.RuntimeContainerRemoved("u1", "c1");
  inbox.RecordContainerCreated("c1");
  CHECK(inbox.Take().created.empty());
}

TEST_CASE("enforcer inbox: a pod removed through RemovePod is tombstoned until gone or expired") {
  EnforcerInbox inbox;
  const auto t0 = Clock::now();
  inbox.RecordPodRemoved("u1", t0);
  inbox.RecordPodRemoved("u2", t0);
  inbox.RecordPodRemoved("u3", t0);
  CHECK(inbox.Tombstoned() == std::set<std::string>{"u1", "u2", "u3"});

  // Allocated again: no longer removed.
  inbox.RecordAllocated("u3");
  CHECK(inbox.Tombstoned() == std::set<std::string>{"u1", "u2"});

  // A pod list that could not be read says nothing of what is gone.
  CHECK(inbox.ExpireTombstones({}, false, t0) == std::set<std::string>{"u1", "u2"});
  // Still listed (terminating): kept; no longer listed: dropped.
  CHECK(inbox.ExpireTombstones({"u1"}, true, t0) == std::set<std::string>{"u1"});
  CHECK(inbox.Tombstoned() == std::set<std::string>{"u1"});
  // Listed for longer than the TTL: dropped too.
  const auto late = t0 + EnforcerInbox::kTombstoneTtl + std::chrono::seconds(1);
  CHECK(inbox.ExpireTombstones({"u1"}, true, t0 + EnforcerInbox::kTombstoneTtl) ==
        std::set<std::string>{"u1"});
  CHECK(inbox.ExpireTombstones({"u1"}, true, late).empty());
  CHECK(inbox.Tombstoned().empty());
}

TEST_CASE("enforcer inbox: what the runtime says of a tombstoned pod is not merged") {
  EnforcerInbox inbox;
  inbox.RuntimeContainer(Pod("u1"), Container("app", "c1"));
  inbox.RecordPodRemoved("u1", Clock::now());  // forgets the runtime's record of it too
  inbox.RuntimeContainer(Pod("u1"), Container("app", "c1"));  // said again, late
  inbox.RuntimeContainer(Pod("u2"), Container("app", "c2"));
  std::vector<PodInfo> pods;
  CHECK(inbox.MergeRuntimePodsInto(pods, true).changed);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].uid == "u2");
}

TEST_CASE("enforcer inbox: the queues are bounded and their overflow asks for a whole pass") {
  EnforcerInbox inbox;
  std::vector<std::string> ids;
  for (size_t i = 0; i <= EnforcerInbox::kMaxQueued; ++i) ids.push_back("c" + std::to_string(i));
  inbox.PublishIndex(Index(ids));
  for (size_t i = 0; i < EnforcerInbox::kMaxQueued; ++i) inbox.RecordContainerCreated(ids[i]);
  InboxEvents e = inbox.Take();
  CHECK(e.created.size() == EnforcerInbox::kMaxQueued);
  CHECK_FALSE(e.general);  // up to the bound, each is queued
  for (size_t i = 0; i <= EnforcerInbox::kMaxQueued; ++i) inbox.RecordContainerCreated(ids[i]);
  e = inbox.Take();
  CHECK(e.created.size() == EnforcerInbox::kMaxQueued);
  CHECK(e.general);

  for (size_t i = 0; i <= EnforcerInbox::kMaxQueued; ++i) inbox.RecordAllocated(ids[i]);
  e = inbox.Take();
  CHECK(e.allocated.size() == EnforcerInbox::kMaxQueued);
  CHECK(e.general);

  inbox.PublishIndex(Index({}));
  for (size_t i = 0; i <= EnforcerInbox::kMaxQueued; ++i) inbox.RecordContainerCreated(ids[i]);
  CHECK(inbox.Take().refresh_pods);
  CHECK(inbox.RetryPending() == EnforcerInbox::kMaxQueued);
}

TEST_CASE("enforcer inbox: the worker waits until work is recorded from another thread") {
  EnforcerInbox inbox;
  const auto started = Clock::now();
  auto waited = std::async(std::launch::async, [&] {
    return inbox.WaitForWork(Clock::now() + std::chrono::seconds(30));
  });
  CHECK(StillWaiting(waited));  // nothing recorded yet
  inbox.RecordAllocated("u1");
  REQUIRE(waited.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const auto w = waited.get();
  CHECK_FALSE(w.stopping);
  CHECK_FALSE(w.general);
  CHECK(Clock::now() - started < std::chrono::seconds(10));
  CHECK(inbox.Take().allocated == std::set<std::string>{"u1"});
}

TEST_CASE(
    "enforcer inbox: the worker's wait ends at its deadline, and a refresh it asks wakes none") {
  EnforcerInbox inbox;
  inbox.RequestPodRefresh();  // the worker's own timer: not work that wakes it
  const auto started = Clock::now();
  const auto w = inbox.WaitForWork(started + milliseconds(50));
  CHECK(Clock::now() - started >= milliseconds(50));
  CHECK_FALSE(w.stopping);
  CHECK(w.refresh_pods);
  CHECK(inbox.Take().refresh_pods);
}

TEST_CASE("enforcer inbox: stopping ends the worker's wait") {
  EnforcerInbox inbox;
  auto waited = std::async(std::launch::async, [&] {
    return inbox.WaitForWork(Clock::now() + std::chrono::seconds(30));
  });
  CHECK(StillWaiting(waited));
  inbox.Stop();
  REQUIRE(waited.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(waited.get().stopping);
  CHECK(inbox.stopping());
}

TEST_CASE("enforcer inbox: a starting container's waiter is released by the wake-up that took it") {
  EnforcerInbox inbox;
  inbox.PublishIndex(Index({"c1"}));
  // A wake-up in flight: it took its events before the container was recorded.
  const InboxEvents in_flight = inbox.Take();
  const uint64_t ticket = inbox.RecordContainerStarting("c1");
  auto released = std::async(std::launch::async,
                             [&] { return inbox.AwaitWakeup(ticket, std::chrono::seconds(30)); });
  inbox.MarkDone(in_flight.wakeup);
  CHECK(StillWaiting(released));  // that wake-up never saw c1

  const InboxEvents next = inbox.Take();
  CHECK(next.created == std::vector<std::string>{"c1"});
  CHECK(StillWaiting(released));  // taken, not done yet
  inbox.MarkDone(next.wakeup);
  REQUIRE(released.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(released.get());
  // Done already: a late wait on the same ticket returns at once.
  CHECK(inbox.AwaitWakeup(ticket, milliseconds(0)));
}

TEST_CASE("enforcer inbox: one wake-up releases every starting container it took") {
  EnforcerInbox inbox;
  inbox.PublishIndex(Index({"c1", "c2"}));
  const uint64_t first = inbox.RecordContainerStarting("c1");
  const uint64_t second = inbox.RecordContainerStarting("c2");
  CHECK(second > first);
  auto a = std::async(std::launch::async,
                      [&] { return inbox.AwaitWakeup(first, std::chrono::seconds(30)); });
  auto b = std::async(std::launch::async,
                      [&] { return inbox.AwaitWakeup(second, std::chrono::seconds(30)); });
  const InboxEvents e = inbox.Take();
  CHECK(e.created == std::vector<std::string>{"c1", "c2"});
  inbox.MarkDone(e.wakeup);
  REQUIRE(a.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  REQUIRE(b.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(a.get());
  CHECK(b.get());
  // An earlier number published late never takes the done mark back.
  inbox.MarkDone(0);
  CHECK(inbox.AwaitWakeup(second, milliseconds(0)));
}

TEST_CASE("enforcer inbox: a starting container's waiter is released, unplaced, on stop") {
  EnforcerInbox inbox;
  const uint64_t ticket = inbox.RecordContainerStarting("c1");
  auto released = std::async(std::launch::async,
                             [&] { return inbox.AwaitWakeup(ticket, std::chrono::seconds(30)); });
  CHECK(StillWaiting(released));
  const auto stopped = Clock::now();
  inbox.Stop();
  REQUIRE(released.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK_FALSE(released.get());
  CHECK(Clock::now() - stopped < std::chrono::seconds(10));
  // Stopped: even a done wake-up releases nobody as placed.
  inbox.MarkDone(inbox.Take().wakeup);
  CHECK_FALSE(inbox.AwaitWakeup(ticket, milliseconds(0)));
}

TEST_CASE("enforcer inbox: a starting container's wait times out when no wake-up comes") {
  EnforcerInbox inbox;
  const uint64_t ticket = inbox.RecordContainerStarting("c1");
  const auto started = Clock::now();
  CHECK_FALSE(inbox.AwaitWakeup(ticket, milliseconds(50)));
  CHECK(Clock::now() - started >= milliseconds(50));
}

TEST_CASE("enforcer inbox: ids recorded by many threads are each taken exactly once") {
  EnforcerInbox inbox;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::string> ids;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) ids.push_back(std::to_string(t) + "-" + std::to_string(i));
  }
  inbox.PublishIndex(Index(ids));
  std::atomic<int> recorders_done{0};
  std::vector<std::thread> recorders;
  for (int t = 0; t < kThreads; ++t) {
    recorders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string& id = ids[static_cast<size_t>(t * kPerThread + i)];
        if (i % 3 == 0) {
          inbox.RecordContainerStarting(id);
        } else {
          inbox.RecordContainerCreated(id);
        }
      }
      ++recorders_done;
    });
  }
  // The worker: takes whatever is there until every recorder is done and the inbox is empty.
  std::map<std::string, int> taken;
  uint64_t last_wakeup = 0;
  bool numbers_grow = true;
  while (true) {
    const bool all_recorded = recorders_done.load() == kThreads;
    inbox.WaitForWork(Clock::now() + milliseconds(5));
    const InboxEvents e = inbox.Take();
    numbers_grow = numbers_grow && e.wakeup >= last_wakeup;
    last_wakeup = e.wakeup;
    for (const auto& id : e.created) ++taken[id];
    if (all_recorded && e.created.empty()) break;
  }
  for (auto& r : recorders) r.join();
  CHECK(numbers_grow);
  CHECK(last_wakeup == static_cast<uint64_t>(kThreads * ((kPerThread + 2) / 3)));
  CHECK(taken.size() == ids.size());
  for (const auto& [id, n] : taken) {
    INFO(id);
    REQUIRE(n == 1);
  }
}

TEST_CASE(
    "enforcer inbox: a wake-up requested with nothing recorded wakes the worker, and its waiter "
    "is released by the take's MarkDone") {
  EnforcerInbox inbox;
  auto woke = std::async(std::launch::async, [&] {
    return inbox.WaitForWork(Clock::now() + std::chrono::seconds(30));
  });
  CHECK(StillWaiting(woke));
  CHECK(inbox.Idle());
  const uint64_t ticket = inbox.RequestWakeup();
  CHECK_FALSE(inbox.Idle());
  REQUIRE(woke.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto released = std::async(std::launch::async,
                             [&] { return inbox.AwaitWakeup(ticket, std::chrono::seconds(30)); });
  const InboxEvents e = inbox.Take();
  CHECK(Empty(e));  // nothing else to do
  CHECK(e.wakeup == ticket);
  CHECK(inbox.Idle());
  CHECK(StillWaiting(released));  // taken, not done yet
  inbox.MarkDone(e.wakeup);
  REQUIRE(released.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(released.get());
}

TEST_CASE("enforcer inbox: it is idle only when nothing was recorded since the last take") {
  EnforcerInbox inbox;
  CHECK(inbox.Idle());
  inbox.RecordAllocated("u1");
  CHECK_FALSE(inbox.Idle());
  (void)inbox.Take();
  CHECK(inbox.Idle());
  inbox.RecordContainerCreated("c-unknown");  // pending: the pod list is to be read
  CHECK_FALSE(inbox.Idle());
  (void)inbox.Take();
  CHECK(inbox.Idle());
  inbox.RequestPodRefresh();  // the worker's own timer: no work for anyone to wait for
  CHECK(inbox.Idle());
}
