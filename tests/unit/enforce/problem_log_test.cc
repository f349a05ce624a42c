// ProblemLog: one active entry per key, counted every time it is seen, resolved by the first pass
// that does not report it again.
#include "enforce/problem_log.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using netqos::ProblemKind;
using netqos::enforce::ProblemLog;
using netqos::enforce::ProblemSnapshot;

TEST_CASE("a problem reported twice is one active entry seen twice", "[enforce]") {
  ProblemLog log;
  log.BeginPass();
  log.Report(ProblemKind::kNic, "eth0", "link down");
  log.Report(ProblemKind::kNic, "eth0", "link down");
  log.EndPass();
  const std::vector<ProblemSnapshot> active = log.Active();
  REQUIRE(active.size() == 1);
  CHECK(active[0].key == "nic:eth0");
  CHECK(active[0].kind == ProblemKind::kNic);
  CHECK(active[0].message == "link down");
  CHECK(active[0].times_seen == 2);
  CHECK(log.total_reports() == 2);
}

TEST_CASE("problems persist across passes and resolve when no longer reported", "[enforce]") {
  ProblemLog log;
  log.BeginPass();
  log.Report(ProblemKind::kCgroup, "1", "E2BIG");
  log.Report(ProblemKind::kNic, "eth1", "missing");
  log.EndPass();
  CHECK(log.Active().size() == 2);

  log.BeginPass();
  log.Report(ProblemKind::kNic, "eth1", "missing again");  // a changed message replaces the old one
  log.EndPass();
  std::vector<ProblemSnapshot> active = log.Active();
  REQUIRE(active.size() == 1);
  CHECK(active[0].key == "nic:eth1");
  CHECK(active[0].message == "missing again");
  CHECK(active[0].times_seen == 2);

  log.BeginPass();
  log.EndPass();
  CHECK(log.Active().empty());
  CHECK(log.total_reports() == 3);  // resolving does not reset the total

  // Coming back after resolution starts counting afresh.
  log.BeginPass();
  log.Report(ProblemKind::kNic, "eth1", "missing");
  log.EndPass();
  active = log.Active();
  REQUIRE(active.size() == 1);
  CHECK(active[0].times_seen == 1);
  CHECK(log.total_reports() == 4);
}

TEST_CASE("a problem's key is its kind, then its object when it has one", "[enforce]") {
  CHECK(netqos::ProblemKey(ProblemKind::kPodAddressMap, "") == "pod-address-map");
  CHECK(netqos::ProblemKey(ProblemKind::kPod, "ns/web") == "pod:ns/web");
  for (const auto& k : netqos::kProblemKinds) {
    INFO(k.name);
    CHECK(netqos::ProblemKindName(k.value) == k.name);  // every kind has one name, its own
  }
}
