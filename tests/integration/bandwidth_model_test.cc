// The bandwidth model on the wire (docs/enforcement.md, "The bandwidth model"): the real netqosd
// shaping a veth into a network namespace, containers in cgroups on the host sending and
// receiving bulk TCP (iperf3), rates read from their HTB leaves' byte counters. Root only;
// everything is removed on scope exit, also when a check fails.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::FakePod;
using netqos::testing::HandleText;
using netqos::testing::kCapTolerance;
using netqos::testing::MeasureCaps;
using netqos::testing::TcClasses;
using netqos::testing::WaitFor;
using netqos::testing::WireRate;
using netqos::testing::Within;
using nlohmann::json;

constexpr auto kWarmUp = 1200ms;  // past HTB's initial burst and TCP slow start
constexpr int kRunSeconds = 8;    // warm-up + up to two windows (MeasureCaps) + slack

// This file's cases: veth addresses in 10.<subnet>.x.0/24 with subnets no other test uses.
DaemonFixtureOptions Case(const std::string& tag, int subnet) {
  return {.tag = "b" + tag, .subnet = subnet, .pod_namespace = "bwmodel"};
}

// The container's entry in `netqosctl classes --json`.
json ClassRow(DaemonFixture& env, const std::string& pod_name) {
  auto r = env.Ctl({"classes", "--json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.output);  // alive for the loop (a temporary would not be)
  for (const auto& c : doc["containers"]) {
    if (c["pod_name"] == pod_name) return c;
  }
  FAIL("no class row for pod " << pod_name);
  return {};
}

// Rate of `leaf` on `dev` while a container of `cgroup` sends (reverse: receives) bulk TCP.
double LeafRate(DaemonFixture& env, const std::string& cgroup, const std::string& dev,
                const std::string& leaf, double cap, uint16_t port, bool reverse) {
  env.Server(0, port);
  env.Client(cgroup, 0, port, kRunSeconds, reverse);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("leaf", "", dev, leaf);
  MeasureCaps(w, {{"leaf", cap}});
  env.StopTraffic();
  return w.Mbps("leaf");
}

}  // namespace

TEST_CASE(
    "bandwidth model: a pod with only kubernetes.io/egress-bandwidth 20M and "
    "ingress-bandwidth 40M is held to 20 and 40 Mbit/s on the wire, and keeps them through a bad "
    "update",
    "[traffic]") {
  DaemonFixture env(Case("a", 226));
  FakePod& p = env.AddPod(1);
  p.annotations["kubernetes.io/egress-bandwidth"] = "20M";
  p.annotations["kubernetes.io/ingress-bandwidth"] = "40M";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  // No Allocate: the annotations alone cap it.
  REQUIRE(env.WaitLeaf(cg, 5000ms).has_value());
  const std::string leaf = HandleText(env.ClassOf(cg)->priority);
  const std::string host = env.veth().host, ifb = env.veth().Ifb();

  const json row = ClassRow(env, p.name);
  INFO(row.dump());
  CHECK(row["allocated_mbps"] == 0);
  CHECK(row["egress_cap"]["ceil_bps"] == 20'000'000);
  CHECK(row["ingress_cap"]["ceil_bps"] == 40'000'000);
  CHECK(row["egress_cap"]["source"] == "annotation");
  // A cap, not a reservation: its guarantee is small.
  CHECK(row["egress_cap"]["rate_bps"].get<uint64_t>() <= 1'000'000);

  const double egress = LeafRate(env, cg, host, leaf, 20, 15801, false);
  const double ingress = LeafRate(env, cg, ifb, leaf, 40, 15802, true);
  std::printf("annotated pod: egress leaf %s %.2f Mbit/s of 20, ingress %.2f Mbit/s of 40\n",
              leaf.c_str(), egress, ingress);
  CHECK(Within(egress, 20));
  CHECK(Within(ingress, 40));

  // A bad quantity: a problem naming the pod and the annotation, and the cap it had stays.
  p.annotations["kubernetes.io/egress-bandwidth"] = "20 Mbit";
  env.WritePods();
  std::string status;
  CHECK(WaitFor(
            [&] {
              status = env.Ctl({"status"}).output;
              return status.find("kubernetes.io/egress-bandwidth") != std::string::npos;
            },
            10000ms)
            .has_value());
  INFO(status);
  CHECK(status.find(p.ns + "/" + p.name) != std::string::npos);
  const auto classes = TcClasses(host);
  REQUIRE(classes.count(leaf) == 1);
  CHECK(classes.at(leaf).ceil_bits == 20'000'000);
  CHECK(ClassRow(env, p.name)["egress_cap"]["ceil_bps"] == 20'000'000);

  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE(
    "bandwidth model: with --container-ceil=level a container alone borrows up to its level's "
    "ceiling, and with all busy each gets at least its allocation",
    "[traffic]") {
  DaemonFixture env(Case("b", 227));
  FakePod& a = env.AddPod(1);
  FakePod& b = env.AddPod(2);
  env.WritePods();
  const std::string cg_a = env.MakeCgroup(a), cg_b = env.MakeCgroup(b);
  // The shared level's ceiling at 300 Mbit/s whatever speed the veth reports (permille of it).
  env.StartDaemon({"--container-ceil=level"});
  auto cap = env.Ctl({"capacity", "--json"});
  REQUIRE(cap.exit_code == 0);
  const uint64_t speed = json::parse(cap.output)["nics"].at(0)["speed_mbps"].get<uint64_t>();
  REQUIRE(speed >= 1000);
  env.StopDaemon(SIGTERM);
  const uint64_t permille = 300 * 1000 / speed;
  REQUIRE(permille >= 1);
  const double level_ceil = static_cast<double>(speed * permille / 1000);
  env.StartDaemon(
      {"--container-ceil=level", "--qos-level-shaping=shared_cores=" + std::to_string(permille) +
                                     ":" + std::to_string(permille) + ":2"});
  env.Allocate(a, 50);
  env.Allocate(b, 100);
  REQUIRE(env.WaitLeaf(cg_a, 5000ms).has_value());
  REQUIRE(env.WaitLeaf(cg_b, 5000ms).has_value());
  const std::string leaf_a = HandleText(env.ClassOf(cg_a)->priority);
  const std::string leaf_b = HandleText(env.ClassOf(cg_b)->priority);
  const std::string host = env.veth().host;

  const json row = ClassRow(env, a.name);
  INFO(row.dump());
  CHECK(row["egress_cap"]["rate_bps"] == 50'000'000);
  CHECK(row["egress_cap"]["borrows"] == true);
  auto classes = TcClasses(host);
  REQUIRE(classes.count(leaf_a) == 1);
  CHECK(classes.at(leaf_a).rate_bits == 50'000'000);
  CHECK(classes.at(leaf_a).ceil_bits == static_cast<uint64_t>(level_ceil) * 1'000'000);

  // Alone: well above its allocation, up to the level's ceiling and no further.
  const double alone = LeafRate(env, cg_a, host, leaf_a, level_ceil, 15811, false);
  std::printf("container-ceil=level: A alone %.1f Mbit/s (allocation 50, level ceiling %.0f)\n",
              alone, level_ceil);
  CHECK(alone > 50 * 2);
  CHECK(alone <= level_ceil * (1 + kCapTolerance));

  // Both busy: each at least its allocation; together no more than the level's ceiling.
  env.Server(0, 15812);
  env.Server(0, 15813);
  env.Client(cg_a, 0, 15812, kRunSeconds);
  env.Client(cg_b, 0, 15813, kRunSeconds);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("a", "", host, leaf_a).HtbClass("b", "", host, leaf_b);
  w.Measure(netqos::testing::kWindow);
  env.StopTraffic();
  std::printf("container-ceil=level, both busy: A %.1f (allocation 50), B %.1f (allocation 100)\n",
              w.Mbps("a"), w.Mbps("b"));
  CHECK(w.Mbps("a") >= 50 * (1 - kCapTolerance));
  CHECK(w.Mbps("b") >= 100 * (1 - kCapTolerance));
  CHECK(w.Mbps("a") + w.Mbps("b") <= level_ceil * (1 + kCapTolerance));

  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}
