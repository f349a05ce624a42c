// What the enforcer's worker publishes, on its own: the status and the leaves as last published,
// whether a container has its class, and the lock contract, with real threads where the waiting
// is the point.
#include "enforce/enforcer_status_board.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "support/observed_container.h"
#include "unit/enforce/runtime_pod_fixtures.h"

namespace {

using netqos::enforce::DesiredContainer;
using netqos::enforce::EnforcerStatus;
using netqos::enforce::EnforcerStatusBoard;
using netqos::enforce::LinkLeaves;
using netqos::enforce::PublishedState;
using netqos::enforce::RuntimePods;
using netqos::enforce::testing::RuntimeContainerOf;
using netqos::enforce::testing::RuntimePodOf;
using netqos::pods::PodInfo;
using namespace std::chrono_literals;

// Pod `uid` with containers (name, id).
PodInfo Pod(const std::string& uid, const std::vector<std::pair<std::string, std::string>>& cs) {
  PodInfo p = RuntimePodOf(uid);
  for (const auto& [name, id] : cs) p.containers.push_back(RuntimeContainerOf(name, id));
  return p;
}

DesiredContainer Class(const std::string& pod_uid, const std::string& container) {
  DesiredContainer d;
  d.pod = netqos::testing::PodMetaOf(pod_uid, "", "");
  d.container_name = container;
  return d;
}

}  // namespace

TEST_CASE("enforcer status board: every pass-time series and kernel-failure target is there at 0") {
  EnforcerStatusBoard board;
  const EnforcerStatus s = board.Status();
  REQUIRE(s.pass_seconds.size() == 4);
  for (const char* scope : {"containers", "all", "resync", "full"}) {
    INFO(scope);
    REQUIRE(s.pass_seconds.count(scope) == 1);
    CHECK(s.pass_seconds.at(scope).count() == 0);
    CHECK(s.pass_seconds.at(scope).bounds == netqos::enforce::PassSecondsBounds());
  }
  CHECK(s.kernel_failures ==
        std::map<std::string, uint64_t>{
            {"class_map", 0}, {"edt_map", 0}, {"pod_address_map", 0}, {"shaping", 0}});
  CHECK(s.passes == 0);
}

TEST_CASE("enforcer status board: Status and LeafLinks are copies of the last publication") {
  EnforcerStatusBoard board;
  LinkLeaves link;
  link.nic.id = {"", "eth0"};
  link.egress = {{7, 0x100101}};
  board.Publish([&](PublishedState& s) {
    s.status.passes = 1;
    s.status.classes[7] = Class("u1", "app");
    s.leaf_links = {link};
  });
  const EnforcerStatus first = board.Status();
  const EnforcerStatusBoard::Leaves leaves = board.LeafLinks();
  board.Publish([](PublishedState& s) {
    s.status.passes = 2;
    s.status.classes.clear();
    s.leaf_links.clear();
  });
  CHECK(first.passes == 1);
  CHECK(first.classes.count(7) == 1);
  REQUIRE(leaves.links.size() == 1);
  CHECK(leaves.links[0].egress == link.egress);
  CHECK(leaves.classes.count(7) == 1);
  CHECK(board.Status().passes == 2);
  CHECK(board.LeafLinks().links.empty());
  // The worker reads its own publication without the lock.
  CHECK(board.worker().status.passes == 2);
}

TEST_CASE(
    "enforcer status board: a container has its class when the classes hold its pod's container "
    "of that name") {
  EnforcerStatusBoard board;
  board.Publish([](PublishedState& s) {
    s.pods = {Pod("u1", {{"app", "c1"}, {"side", "c2"}}), Pod("u2", {{"app", "c3"}})};
    const auto index = s.IndexContainers();
    CHECK(index == s.known_containers);
    s.status.classes[10] = Class("u1", "app");
  });
  CHECK(board.HasClass("c1"));
  CHECK_FALSE(board.HasClass("c2"));  // listed, its pod classed, but not it
  CHECK_FALSE(board.HasClass("c3"));  // the same name in another pod
  CHECK_FALSE(board.HasClass("c-unknown"));

  // A container the runtime's record added to the pods since the index was built.
  board.Publish([](PublishedState& s) {
    s.pods.push_back(Pod("u3", {{"app", "c9"}}));
    RuntimePods::Merged merged;
    merged.changed = true;
    merged.containers = {{2, 0}};
    s.AddRuntimeContainers(merged);
    s.status.classes[11] = Class("u3", "app");
  });
  CHECK(board.HasClass("c9"));
  CHECK(board.worker().known_containers->count("c9") == 0);
  // Indexed again: in the index itself, and the runtime's additions forgotten.
  board.Publish([](PublishedState& s) { s.IndexContainers(); });
  CHECK(board.worker().runtime_known.empty());
  CHECK(board.HasClass("c9"));
}

TEST_CASE("enforcer status board: a reader waits while the worker publishes") {
  EnforcerStatusBoard board;
  std::promise<void> entered;
  std::promise<void> release;
  std::thread worker([&] {
    board.Publish([&](PublishedState& s) {
      s.status.passes = 1;
      entered.set_value();
      release.get_future().wait();
      s.status.classified = 1;
    });
  });
  entered.get_future().wait();
  auto status = std::async(std::launch::async, [&] { return board.Status(); });
  auto has = std::async(std::launch::async, [&] { return board.HasClass("c1"); });
  auto leaves = std::async(std::launch::async, [&] { return board.LeafLinks(); });
  // None of them may read the half-made publication: they wait for it.
  CHECK(status.wait_for(100ms) == std::future_status::timeout);
  CHECK(has.wait_for(0ms) == std::future_status::timeout);
  CHECK(leaves.wait_for(0ms) == std::future_status::timeout);
  release.set_value();
  worker.join();
  const EnforcerStatus s = status.get();
  CHECK(s.passes == 1);
  CHECK(s.classified == 1);
  CHECK_FALSE(has.get());
  CHECK(leaves.get().links.empty());
}

TEST_CASE("enforcer status board: readers on other threads only ever see whole publications") {
  EnforcerStatusBoard board;
  constexpr uint64_t kPublications = 300;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    for (uint64_t i = 1; i <= kPublications; ++i) {
      board.Publish([&](PublishedState& s) {
        // A new pod list each time (the index is rebuilt, the old pods freed), with "c-stable"
        // at another place and classed in every publication.
        s.pods.clear();
        for (uint64_t p = 0; p < i % 5; ++p) {
          s.pods.push_back(Pod("filler" + std::to_string(p), {{"app", "f" + std::to_string(p)}}));
        }
        s.pods.push_back(Pod("stable", {{"app", "c-stable"}}));
        s.IndexContainers();
        s.status.passes = i;
        s.status.classes.clear();
        s.status.classes[i] = Class("stable", "app");
        std::this_thread::yield();  // a reader without the lock would see passes ahead
        s.status.classified = s.status.classes.size() + i - 1;
      });
    }
    done = true;
  });
  int torn = 0, unplaced = 0, reads = 0;
  while (!done) {
    const EnforcerStatus s = board.Status();
    if (s.passes != 0 && s.classified != s.passes) ++torn;
    if (s.passes != 0 && !board.HasClass("c-stable")) ++unplaced;
    ++reads;
  }
  worker.join();
  INFO("reads " << reads);
  CHECK(torn == 0);
  CHECK(unplaced == 0);
  CHECK(board.Status().passes == kPublications);
}
