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
#include <utility>
#include <vector>

#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::FakePod;
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

// The container's entry in `netqosctl classes --json`. The class map entry comes before the
// pass that wrote it publishes its status (the NIC's trees are applied in between), so the row
// is waited for.
json ClassRow(DaemonFixture& env, const std::string& pod_name) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string output;
  do {
    auto r = env.Ctl({"classes", "--json"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    output = r.output;
    const json doc = json::parse(r.output);  // alive for the loop (a temporary would not be)
    for (const auto& c : doc["containers"]) {
      if (c["pod_name"] == pod_name) return c;
    }
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  FAIL("no class row for pod " << pod_name << " within 5 s; last answer:\n" << output);
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
  const std::string leaf = TcHandleText(env.ClassOf(cg)->priority);
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
  const std::string leaf_a = TcHandleText(env.ClassOf(cg_a)->priority);
  const std::string leaf_b = TcHandleText(env.ClassOf(cg_b)->priority);
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

TEST_CASE(
    "bandwidth model: netqos.io/burst sets a leaf's buckets, a one-packet burst costs rate where "
    "the default bucket holds the cap, and a bad value falls back to the level's burst",
    "[traffic]") {
  DaemonFixture env(Case("c", 228));
  // Per rate, a pod with a one-packet burst and one with the default bucket.
  constexpr int kRates[] = {200, 1000};
  std::vector<std::pair<FakePod*, FakePod*>> pairs;
  for (unsigned i = 0; i < 2; ++i) {
    FakePod& tiny = env.AddPod(2 * i + 1);
    tiny.annotations["netqos.io/burst"] = "1600";  // one packet
    pairs.emplace_back(&tiny, &env.AddPod(2 * i + 2));
  }
  env.WritePods();
  std::map<const FakePod*, std::string> cgroups;
  for (const auto& [tiny, dflt] : pairs) {
    cgroups[tiny] = env.MakeCgroup(*tiny);
    cgroups[dflt] = env.MakeCgroup(*dflt);
  }
  // A level the pods are not in, so that their own leaves keep the default bucket; its default
  // leaf shows the flag reaching the tree.
  env.StartDaemon({"--qos-level-burst=dedicated_cores=64Ki"});
  std::map<const FakePod*, std::string> leaves;
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (const FakePod* p : {pairs[i].first, pairs[i].second}) {
      env.Allocate(*p, kRates[i]);
      REQUIRE(env.WaitLeaf(cgroups[p], 5000ms).has_value());
      leaves[p] = TcHandleText(env.ClassOf(cgroups[p])->priority);
    }
  }
  FakePod& tiny = *pairs[0].first;
  FakePod& dflt = *pairs[0].second;
  const std::string& leaf_tiny = leaves[&tiny];
  const std::string& leaf_dflt = leaves[&dflt];
  const std::string host = env.veth().host;

  // 200 Mbit/s is 25,000 bytes per ms: the default bucket is 25,000 + 1,600 bytes.
  constexpr uint64_t kDefaultBucket = 26'600;
  // libnl passes a bucket as whole microseconds at its rate, and tc prints sizes above 1 KiB
  // rounded ("64Kb", "123.4Kb").
  const auto near = [](uint64_t have, uint64_t want) {
    const uint64_t slack = want / 50 + 64;
    return have + slack >= want && have <= want + slack;
  };
  auto classes = TcClasses(host);
  REQUIRE(classes.count(leaf_tiny) == 1);
  REQUIRE(classes.count(leaf_dflt) == 1);
  REQUIRE(classes.count("10:21") == 1);
  INFO("tc bursts: tiny " << classes.at(leaf_tiny).burst_bytes << "/"
                          << classes.at(leaf_tiny).cburst_bytes << ", default "
                          << classes.at(leaf_dflt).burst_bytes << ", dedicated default leaf "
                          << classes.at("10:21").burst_bytes);
  CHECK(near(classes.at(leaf_tiny).burst_bytes, 1600));
  CHECK(near(classes.at(leaf_tiny).cburst_bytes, 1600));
  CHECK(near(classes.at(leaf_dflt).burst_bytes, kDefaultBucket));
  CHECK(near(classes.at(leaf_dflt).cburst_bytes, kDefaultBucket));
  CHECK(near(classes.at(leaves[pairs[1].second]).burst_bytes, 126'600));  // 1 Gbit/s
  CHECK(near(classes.at("10:21").burst_bytes, 65'536));
  CHECK(ClassRow(env, tiny.name)["egress_cap"]["burst_bytes"] == 1600);
  CHECK(ClassRow(env, tiny.name)["ingress_cap"]["burst_bytes"] == 1600);
  CHECK(ClassRow(env, dflt.name)["egress_cap"]["burst_bytes"] == kDefaultBucket);

  // One at a time, so that none takes from another.
  uint16_t port = 15821;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const double cap = kRates[i];
    const FakePod* t = pairs[i].first;
    const FakePod* d = pairs[i].second;
    const double rate_tiny = LeafRate(env, cgroups[t], host, leaves[t], cap, port++, false);
    const double rate_dflt = LeafRate(env, cgroups[d], host, leaves[d], cap, port++, false);
    std::printf(
        "burst: %.0f Mbit/s cap, bulk TCP: one-packet bucket (1600 B) %.1f Mbit/s (%.3f of the "
        "cap), default bucket (%.0f B) %.1f Mbit/s (%.3f)\n",
        cap, rate_tiny, rate_tiny / cap, cap * 125 + 1600, rate_dflt, rate_dflt / cap);
    CHECK(Within(rate_dflt, cap));
    // What a one-packet bucket loses depends on how late the timer fires on this host, so only
    // its bound is certain: a bucket never lets a leaf above its rate.
    CHECK(rate_tiny <= cap * (1 + kCapTolerance));
  }

  // A bad value: a problem naming the pod and the annotation, and the leaf back on its level's
  // burst (the default here), applied to the class that already exists.
  tiny.annotations["netqos.io/burst"] = "1 packet";
  env.WritePods();
  std::string status;
  CHECK(WaitFor(
            [&] {
              status = env.Ctl({"status"}).output;
              return status.find("netqos.io/burst") != std::string::npos;
            },
            10000ms)
            .has_value());
  INFO(status);
  CHECK(status.find(tiny.ns + "/" + tiny.name) != std::string::npos);
  CHECK(status.find("\"1 packet\"") != std::string::npos);
  CHECK(WaitFor([&] { return near(TcClasses(host).at(leaf_tiny).burst_bytes, kDefaultBucket); },
                10000ms)
            .has_value());
  CHECK(ClassRow(env, tiny.name)["egress_cap"]["burst_bytes"] == kDefaultBucket);

  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}
