#include "enforce/pod_addresses.h"

#include <catch2/catch.hpp>

#include "support/routed_pods.h"
#include "unit/enforce/fake_tables.h"

namespace {

using netqos::Status;
using netqos::enforce::DesiredContainer;
using netqos::enforce::ParsePodAddress;
using netqos::enforce::PlanPodAddresses;
using netqos::enforce::PodAddress;
using netqos::enforce::PodAddressPlan;
using netqos::enforce::PodAddressTable;
using netqos::enforce::PodAddressText;
using netqos::enforce::SyncPodAddresses;
using netqos::pods::PodInfo;
using netqos::testing::ClassifiedIn;
using netqos::testing::RoutedPod;

PodAddress A(const std::string& text) { return *ParsePodAddress(text); }

using FakeTable = netqos::enforce::testing::FakePodAddressTable;

}  // namespace

TEST_CASE("pod addresses: IPv4 is mapped into IPv6, text round-trips", "[enforce]") {
  const auto v4 = ParsePodAddress("10.1.2.3");
  REQUIRE(v4);
  CHECK((*v4)[10] == 0xff);
  CHECK((*v4)[11] == 0xff);
  CHECK((*v4)[12] == 10);
  CHECK((*v4)[15] == 3);
  CHECK(PodAddressText(*v4) == "10.1.2.3");
  REQUIRE(ParsePodAddress("fd00::5"));
  CHECK(PodAddressText(*ParsePodAddress("fd00::5")) == "fd00::5");
  CHECK_FALSE(ParsePodAddress("10.1.2"));
  CHECK_FALSE(ParsePodAddress("pod-a"));
  CHECK_FALSE(ParsePodAddress(""));
}

TEST_CASE("pod addresses: each address of a routed pod maps to its capped container", "[enforce]") {
  std::map<uint64_t, DesiredContainer> classes = {
      {11, ClassifiedIn("p1", "app", 11)},
      {12, ClassifiedIn("p1", "sidecar")},
      {21, ClassifiedIn("p2", "only")},
      {31, ClassifiedIn("host", "app", 31)},
  };
  const std::vector<PodInfo> pods = {
      RoutedPod("p1", {"10.0.0.1", "fd00::1"}), RoutedPod("p2", {"10.0.0.2"}),
      RoutedPod("host", {"192.168.0.9"}, true), RoutedPod("unclassified", {"10.0.0.3"})};
  const PodAddressPlan plan = PlanPodAddresses(pods, classes);
  CHECK(plan.problems.empty());
  CHECK(plan.entries == std::map<PodAddress, uint64_t>{
                            {A("10.0.0.1"), 11}, {A("fd00::1"), 11}, {A("10.0.0.2"), 21}});
}

TEST_CASE("pod addresses: finished pods, bad and contested addresses are left out", "[enforce]") {
  std::map<uint64_t, DesiredContainer> classes = {
      {1, ClassifiedIn("done", "c", 1)}, {2, ClassifiedIn("new", "c", 2)},
      {3, ClassifiedIn("a", "c", 3)},    {4, ClassifiedIn("b", "c", 4)},
      {5, ClassifiedIn("bad", "c", 5)},
  };
  PodInfo done = RoutedPod("done", {"10.0.0.7"});
  done.phase = "Succeeded";
  const std::vector<PodInfo> pods = {done, RoutedPod("new", {"10.0.0.7"}),
                                     RoutedPod("a", {"10.0.0.8"}), RoutedPod("b", {"10.0.0.8"}),
                                     RoutedPod("bad", {"not-an-ip", "10.0.0.9"})};
  const PodAddressPlan plan = PlanPodAddresses(pods, classes);
  // The finished pod's address went to the new pod; the address two running pods claim to
  // neither; the bad text is skipped, the good one of the same pod kept.
  CHECK(plan.entries == std::map<PodAddress, uint64_t>{{A("10.0.0.7"), 2}, {A("10.0.0.9"), 5}});
  REQUIRE(plan.problems.size() == 2);
  CHECK(plan.problems[0].message.find("ns/pod-a and ns/pod-b both list address 10.0.0.8") !=
        std::string::npos);
  CHECK(plan.problems[1].key() == "pod:ns/pod-bad");
  CHECK(plan.problems[1].message.find("\"not-an-ip\" is not an IP address") != std::string::npos);
}

TEST_CASE("pod addresses: containers with leaves of their own are reported", "[enforce]") {
  std::map<uint64_t, DesiredContainer> classes = {{7, ClassifiedIn("p", "zeta", 7)},
                                                  {8, ClassifiedIn("p", "alpha", 8)},
                                                  {9, ClassifiedIn("p", "mid")}};
  const PodAddressPlan plan = PlanPodAddresses({RoutedPod("p", {"10.0.0.1"})}, classes);
  CHECK(plan.entries.at(A("10.0.0.1")) == 8);  // the first capped one by name
  REQUIRE(plan.problems.size() == 1);
  CHECK(plan.problems[0].key() == "pod:ns/pod-p");
  CHECK(plan.problems[0].message.find("container alpha") != std::string::npos);

  // One pod-level leaf shared by all: no problem.
  classes = {{7, ClassifiedIn("p", "zeta", 70)}, {8, ClassifiedIn("p", "alpha", 70)}};
  CHECK(PlanPodAddresses({RoutedPod("p", {"10.0.0.1"})}, classes).problems.empty());
}

TEST_CASE("pod addresses: the sync writes the difference only", "[enforce]") {
  FakeTable t;
  t.entries = {{A("10.0.0.1"), 1}, {A("10.0.0.2"), 2}, {A("10.0.0.3"), 3}};
  PodAddressPlan plan;
  plan.entries = {{A("10.0.0.1"), 1}, {A("10.0.0.2"), 20}, {A("10.0.0.4"), 4}};
  auto r = SyncPodAddresses(t, t.entries, plan);
  CHECK(r.set == 2);
  CHECK(r.cleared == 1);
  CHECK(r.errors.empty());
  CHECK(t.entries == plan.entries);

  t.fail_set = true;
  plan.entries[A("10.0.0.5")] = 5;
  r = SyncPodAddresses(t, t.entries, plan);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message().find("pod address 10.0.0.5") != std::string::npos);
  CHECK(t.entries.count(A("10.0.0.1")) == 1);  // nothing already there was lost
}
