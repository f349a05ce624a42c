#include "enforce/pod_veths.h"

#include <catch2/catch.hpp>

#include "enforce/pod_addresses.h"
#include "support/routed_pods.h"

namespace {

using netqos::core::NicId;
using netqos::enforce::BestRoute;
using netqos::enforce::DesiredContainer;
using netqos::enforce::kCarrierSlots;
using netqos::enforce::NodeRoute;
using netqos::enforce::ParsePodAddress;
using netqos::enforce::PlanPodVeths;
using netqos::enforce::PodAddress;
using netqos::enforce::SlotAllocator;
using netqos::enforce::VethLink;
using netqos::pods::PodInfo;
using netqos::testing::ClassifiedIn;
using netqos::testing::RoutedPod;

PodAddress A(const std::string& text) { return *ParsePodAddress(text); }

VethLink Veth(int ifindex, std::vector<std::string> peer) {
  VethLink v;
  v.ifindex = ifindex;
  v.name = "veth" + std::to_string(ifindex);
  v.peer_netnsid = ifindex;
  for (const auto& a : peer) v.peer_addresses.push_back(A(a));
  return v;
}

// prefix "10.0.0.0/8" style, IPv4 or IPv6.
NodeRoute Route(const std::string& cidr, int ifindex) {
  const size_t slash = cidr.find('/');
  NodeRoute r;
  r.prefix = A(cidr.substr(0, slash));
  const int len = std::stoi(cidr.substr(slash + 1));
  r.length = cidr.find(':') == std::string::npos ? len + 96 : len;
  r.ifindex = ifindex;
  return r;
}

const NicId kNic0{"", "eth0"};
const NicId kNic1{"", "eth1"};

}  // namespace

TEST_CASE("pod veths: the longest route holding an address wins", "[enforce]") {
  const std::vector<NodeRoute> routes = {Route("0.0.0.0/0", 1), Route("10.0.0.0/8", 2),
                                         Route("10.1.2.3/32", 3), Route("fd00::/64", 4)};
  CHECK(BestRoute(routes, A("10.1.2.3"))->ifindex == 3);
  CHECK(BestRoute(routes, A("10.1.2.4"))->ifindex == 2);
  CHECK(BestRoute(routes, A("192.168.1.1"))->ifindex == 1);
  CHECK(BestRoute(routes, A("fd00::9"))->ifindex == 4);
  CHECK_FALSE(BestRoute(routes, A("fd01::9")));  // no IPv6 default
  // An odd prefix length compares the bits, not whole bytes.
  CHECK(BestRoute({Route("10.1.2.0/25", 5)}, A("10.1.2.127"))->ifindex == 5);
  CHECK_FALSE(BestRoute({Route("10.1.2.0/25", 5)}, A("10.1.2.128")));
}

TEST_CASE("pod veths: a pod's veth is the one the node routes its address to", "[enforce]") {
  const std::map<uint64_t, DesiredContainer> classes = {
      {11, ClassifiedIn("p1", "app", 0x101, {kNic1})},
      {12, ClassifiedIn("p1", "sidecar")},
      {21, ClassifiedIn("p2", "only")},
  };
  // veth 7's other end even claims p2's address too (a pod with NET_ADMIN may add any): the
  // routes decide, not what a pod says about itself.
  const std::vector<VethLink> veths = {Veth(7, {"10.1.0.5", "10.1.0.6"}), Veth(8, {"10.1.0.6"})};
  const std::vector<NodeRoute> routes = {Route("10.1.0.5/32", 7), Route("10.1.0.6/32", 8),
                                         Route("0.0.0.0/0", 2)};
  const auto plan = PlanPodVeths({RoutedPod("p1", {"10.1.0.5"}), RoutedPod("p2", {"10.1.0.6"})},
                                 classes, veths, routes, {kNic0, kNic1});
  CHECK(plan.problems.empty());
  CHECK(plan.unplaced == 0);
  REQUIRE(plan.veths.size() == 2);
  CHECK(plan.veths.at(7).pod_uid == "p1");
  CHECK(plan.veths.at(7).cgroup_id == 11);  // the container with the leaf
  CHECK(plan.veths.at(7).home == kNic1);    // the leaf's NIC
  CHECK(plan.veths.at(8).pod_uid == "p2");
  CHECK(plan.veths.at(8).home == kNic0);  // no leaf: the first enforced NIC
  CHECK(plan.container_veth == std::map<uint64_t, int>{{11, 7}, {12, 7}, {21, 8}});
}

TEST_CASE("pod veths: behind a bridge, the veth whose other end holds every address of the pod",
          "[enforce]") {
  const std::map<uint64_t, DesiredContainer> classes = {{11, ClassifiedIn("p1", "app")},
                                                        {21, ClassifiedIn("p2", "app")}};
  // The pods' subnet is routed to the bridge (ifindex 2), not to a veth.
  const std::vector<NodeRoute> routes = {Route("10.244.0.0/24", 2)};
  const std::vector<VethLink> veths = {Veth(7, {"10.244.0.5", "fd00::5"}), Veth(8, {"10.244.0.6"})};
  const auto plan = PlanPodVeths(
      {RoutedPod("p1", {"10.244.0.5", "fd00::5"}), RoutedPod("p2", {"10.244.0.6", "fd00::6"})},
      classes, veths, routes, {});
  REQUIRE(plan.veths.count(7) == 1);
  CHECK(plan.veths.at(7).pod_uid == "p1");
  CHECK_FALSE(plan.veths.at(7).home);  // no enforced NIC: nothing to redirect to
  // p2's other end lacks its IPv6 address: not proven to be p2's.
  CHECK(plan.veths.count(8) == 0);
}

TEST_CASE("pod veths: two veths claiming a pod, or two pods claiming a veth, place none",
          "[enforce]") {
  const std::map<uint64_t, DesiredContainer> classes = {{11, ClassifiedIn("p1", "app")},
                                                        {21, ClassifiedIn("p2", "app")},
                                                        {31, ClassifiedIn("p3", "app")}};
  // p1: both veths' other ends hold its address (one pod copied it).
  // p2 and p3: one veth holds both their addresses.
  const std::vector<VethLink> veths = {Veth(7, {"10.2.0.1"}), Veth(8, {"10.2.0.1"}),
                                       Veth(9, {"10.2.0.2", "10.2.0.3"})};
  const auto plan = PlanPodVeths(
      {RoutedPod("p1", {"10.2.0.1"}), RoutedPod("p2", {"10.2.0.2"}), RoutedPod("p3", {"10.2.0.3"})},
      classes, veths, {}, {kNic0});
  CHECK(plan.veths.empty());
  CHECK(plan.container_veth.empty());
  CHECK(plan.unplaced == 3);
  REQUIRE(plan.problems.size() == 2);
  CHECK(plan.problems[0].key() == "pod:ns/pod-p1");
  CHECK(plan.problems[0].message.find("2 veths (veth7, veth8)") != std::string::npos);
  CHECK(plan.problems[1].key() == "veth:veth9");
  CHECK(plan.problems[1].message.find("ns/pod-p2, ns/pod-p3") != std::string::npos);
}

TEST_CASE("pod veths: host-network, finished, unclassified and address-less pods have none",
          "[enforce]") {
  const std::map<uint64_t, DesiredContainer> classes = {{11, ClassifiedIn("host", "app")},
                                                        {21, ClassifiedIn("done", "app")},
                                                        {41, ClassifiedIn("noip", "app")}};
  PodInfo done = RoutedPod("done", {"10.3.0.2"});
  done.phase = "Succeeded";
  const std::vector<VethLink> veths = {Veth(7, {"10.3.0.1"}), Veth(8, {"10.3.0.2"}),
                                       Veth(9, {"10.3.0.3"})};
  const auto plan = PlanPodVeths({RoutedPod("host", {"10.3.0.1"}, true), done,
                                  RoutedPod("unclassified", {"10.3.0.3"}), RoutedPod("noip", {})},
                                 classes, veths, {}, {kNic0});
  CHECK(plan.veths.empty());
  CHECK(plan.problems.empty());
}

TEST_CASE("carrier slots: stable per container, adopted, released, never reused at once",
          "[enforce]") {
  SlotAllocator slots;
  CHECK(slots.Adopt(100, 5));
  CHECK_FALSE(slots.Adopt(101, 5));  // taken
  CHECK_FALSE(slots.Adopt(102, 0));  // not a slot
  CHECK_FALSE(slots.Adopt(103, kCarrierSlots));
  CHECK(slots.Acquire(100) == 5);  // kept
  const uint16_t a = slots.Acquire(200);
  const uint16_t b = slots.Acquire(300);
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(a != b);
  CHECK(a != 5);
  CHECK(slots.Acquire(200) == a);
  CHECK(slots.ReleaseExcept({100, 300}) == std::vector<uint16_t>{a});
  // The freed slot is not the next one given.
  const uint16_t c = slots.Acquire(400);
  CHECK(c != a);
  CHECK(c != 0);
}

TEST_CASE("carrier slots: when all are taken, none is given", "[enforce]") {
  SlotAllocator slots;
  for (uint64_t id = 1; id < kCarrierSlots; ++id) REQUIRE(slots.Acquire(id) != 0);
  CHECK(slots.Acquire(kCarrierSlots) == 0);
  slots.ReleaseExcept({});
  CHECK(slots.Acquire(kCarrierSlots) != 0);
}
