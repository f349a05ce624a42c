// Tenants raising their own treatment through their pod's annotations, against the real netqosd
// enforcing on a veth (DaemonFixture: the veth's host end is the only shaped NIC, container
// cgroups listed by a file:// pod list, a private bpffs, `netqosd --uninstall` and a leftover
// check at the end). The rule under test: a pod's annotation may only make its own treatment
// stricter unless the operator's tenant policy allows more (docs/security.md, "Tenants and their
// annotations"). Each case is one way a tenant lifted its treatment with netqosd's default flags,
// measured on the wire (the peer's received bytes, and the leaf's HTB bytes where it has one) or,
// for DSCP, by capture at the peer; each failed before the rule was enforced (the numbers are in
// the commit that added it). Root only.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"
#include "support/dscp_capture.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::testing::Capture;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::FakePod;
using netqos::testing::kCapTolerance;
using netqos::testing::LinkDirection;
using netqos::testing::MeasureCaps;
using netqos::testing::SendFrom;
using netqos::testing::WaitFor;
using netqos::testing::WireRate;
using netqos::testing::Within;
using nlohmann::json;

constexpr auto kWarmUp = 1200ms;  // past HTB's initial burst and TCP slow start
constexpr int kRunSeconds = 8;    // warm-up + up to two windows (MeasureCaps) + slack
constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";

// This file's cases: veth addresses in 10.<subnet>.x.0/24 with subnets no other test uses
// (214-222).
DaemonFixtureOptions Case(const std::string& tag, int subnet) {
  return {.tag = "t" + tag, .subnet = subnet, .pod_namespace = "tenant"};
}

// Which way the bulk TCP flows: the container sends (its leaf on the veth's host end), or the
// container receives (iperf3 -R: its leaf on the veth's IFB).
enum class Way { kOut, kIn };
const char* WayText(Way way) { return way == Way::kOut ? "out" : "in"; }

// What gets through (whatever class the packets took) while `cgroup` exchanges bulk TCP with the
// peer, and what `leaf` carries when given; measured after the warm-up, within MeasureCaps's
// windows against `cap`. Out: what the peer's veth received. In: what the IFB passed on to the
// node, all its classes (the veth's own receive counter would also count what the IFB drops).
// The leaf's HTB bytes are wire bytes (each segment with its headers); the devices count a GSO or
// GRO packet's headers once, a few percent less: their count is an upper bound only.
struct Sent {
  double wire = 0;
  double leaf = -1;  // -1: no leaf measured
};
Sent SendBulk(DaemonFixture& env, const std::string& cgroup, uint16_t port, double cap,
              const std::string& leaf = "", Way way = Way::kOut) {
  env.Server(0, port);
  env.Client(cgroup, 0, port, kRunSeconds, way == Way::kIn);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  if (way == Way::kOut) {
    w.Link("wire", env.ns(), env.veth().peer, LinkDirection::kRx);
  } else {
    w.Link("wire", "", env.veth().Ifb(), LinkDirection::kTx);
  }
  const std::string leaf_dev = way == Way::kOut ? env.veth().host : env.veth().Ifb();
  if (!leaf.empty()) w.HtbClass("leaf", "", leaf_dev, leaf);
  MeasureCaps(w, {{leaf.empty() ? "wire" : "leaf", cap}});
  env.StopTraffic();
  Sent s;
  s.wire = w.Mbps("wire");
  if (!leaf.empty()) s.leaf = w.Mbps("leaf");
  return s;
}

// What a capped sender must show: the peer received at most `cap` (+ the tolerance), and its leaf
// carried `cap`.
void CheckHeld(const Sent& s, const std::string& leaf, double cap) {
  CHECK(s.wire <= cap * (1 + kCapTolerance));
  REQUIRE(!leaf.empty());
  CHECK(Within(s.leaf, cap));
}

// The container's leaf handle ("10:100") once it has one; "" when it gets none within 5 s.
std::string LeafOf(DaemonFixture& env, const std::string& cgroup) {
  if (!env.WaitLeaf(cgroup, 5000ms)) return "";
  return TcHandleText(env.ClassOf(cgroup)->priority);
}

// `netqosctl status` once its problems name every one of `needles` (waits up to 10 s); the
// output either way.
std::string StatusNaming(DaemonFixture& env, const std::vector<std::string>& needles) {
  std::string out;
  WaitFor(
      [&] {
        out = env.Ctl({"status"}).output;
        for (const auto& n : needles) {
          if (out.find(n) == std::string::npos) return false;
        }
        return true;
      },
      10000ms);
  return out;
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant policy: netqos.io/container-ceil: level with 10G bandwidth annotations is held to "
    "the allocation both ways where the policy allows no borrowing",
    "[enforcement][escape]") {
  DaemonFixture env(Case("c", 214));
  FakePod& p = env.AddPod(1);
  p.annotations["netqos.io/container-ceil"] = "level";
  p.annotations["kubernetes.io/egress-bandwidth"] = "10G";
  p.annotations["kubernetes.io/ingress-bandwidth"] = "10G";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, 50);
  const std::string leaf = LeafOf(env, cg);
  for (Way way : {Way::kOut, Way::kIn}) {
    const Sent s = SendBulk(env, cg, way == Way::kOut ? 15901 : 15902, 50, leaf, way);
    std::printf("container-ceil: level + 10G, allocation 50, %s: wire %.1f Mbit/s, leaf %s %.1f\n",
                WayText(way), s.wire, leaf.c_str(), s.leaf);
    INFO(WayText(way));
    CheckHeld(s, leaf, 50);
  }
  const std::string status = StatusNaming(env, {"netqos.io/container-ceil", "refused"});
  INFO(status);
  CHECK(Contains(status, "netqos.io/container-ceil"));
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE(
    "tenant policy: an implicit allocation (quantity-from-qrm-declaration) is capped at its "
    "declared bandwidth both ways by a leaf of its own",
    "[enforcement][escape]") {
  DaemonFixture env(Case("i", 215));
  FakePod& p = env.AddPod(1);
  p.annotations["qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration"] = "true";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, 50, "", {{"qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration", "true"}});
  const std::string leaf = LeafOf(env, cg);
  for (Way way : {Way::kOut, Way::kIn}) {
    const Sent s = SendBulk(env, cg, way == Way::kOut ? 15911 : 15912, 50, leaf, way);
    std::printf("implicit 50 Mbit/s request, %s: wire %.1f Mbit/s, leaf %s %.1f\n", WayText(way),
                s.wire, leaf.c_str(), s.leaf);
    INFO(WayText(way));
    CheckHeld(s, leaf, 50);
  }
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE(
    "tenant policy: netqos.io/burst: 1Gi is held to the level's burst, not seconds at line rate",
    "[enforcement][escape]") {
  DaemonFixture env(Case("b", 216));
  FakePod& p = env.AddPod(1);
  p.annotations["netqos.io/burst"] = "1Gi";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, 50);
  const std::string leaf = LeafOf(env, cg);
  REQUIRE(!leaf.empty());
  // A new leaf starts with its buckets full: the first 2 s of bulk TCP spend them. The leaf's
  // ingress bucket (on the IFB) is untouched by the egress run: it starts full too.
  for (Way way : {Way::kOut, Way::kIn}) {
    const uint16_t port = way == Way::kOut ? 15921 : 15922;
    env.Server(0, port);
    WireRate w;
    if (way == Way::kOut) {
      w.Link("wire", env.ns(), env.veth().peer, LinkDirection::kRx);
    } else {
      w.Link("wire", "", env.veth().Ifb(), LinkDirection::kTx);
    }
    w.Start();
    env.Client(cg, 0, port, 2, way == Way::kIn);
    std::this_thread::sleep_for(2000ms);
    w.Stop();
    env.StopTraffic();
    const std::string dev = way == Way::kOut ? env.veth().host : env.veth().Ifb();
    const auto classes = netqos::testing::TcClasses(dev);
    const uint64_t burst = classes.count(leaf) ? classes.at(leaf).burst_bytes : 0;
    std::printf(
        "burst 1Gi, allocation 50, %s: first 2 s on the wire %.1f Mbit/s, leaf burst %llu B\n",
        WayText(way), w.Mbps("wire"), static_cast<unsigned long long>(burst));
    INFO(WayText(way));
    CHECK(w.Mbps("wire") <= 50 * (1 + kCapTolerance));
    CHECK(w.Mbps("wire") >= 25);  // traffic flowed
    // The default bucket at 50 Mbit/s: 1 ms of it + one packet (tc prints it rounded).
    CHECK(burst > 0);
    CHECK(burst <= 16 * 1024);
  }
  const std::string status = StatusNaming(env, {"netqos.io/burst", "refused"});
  INFO(status);
  CHECK(Contains(status, "netqos.io/burst"));
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE(
    "tenant policy: a pod with an invalid QoS level is classified at the unclassified level and "
    "keeps its annotation caps",
    "[enforcement][escape]") {
  DaemonFixture env(Case("q", 217));
  FakePod& p = env.AddPod(1);
  p.annotations[kQosKey] = "bogus";
  p.annotations["kubernetes.io/egress-bandwidth"] = "20M";
  p.annotations["kubernetes.io/ingress-bandwidth"] = "20M";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  const std::string leaf = LeafOf(env, cg);
  for (Way way : {Way::kOut, Way::kIn}) {
    const Sent s = SendBulk(env, cg, way == Way::kOut ? 15931 : 15932, 20, leaf, way);
    std::printf(
        "qos_level bogus, 20M annotations, no allocation, %s: wire %.1f Mbit/s, leaf %s %.1f\n",
        WayText(way), s.wire, leaf.c_str(), s.leaf);
    INFO(WayText(way));
    CheckHeld(s, leaf, 20);
  }
  const auto entry = env.ClassOf(cg);
  REQUIRE(entry.has_value());
  CHECK(entry->qos_level == NETQOS_QOS_SHARED);  // --unclassified-qos-level's default
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE(
    "tenant policy: netqos.io/dscp is applied only where the policy lists the value, else the "
    "level's marking stands, and every other packet leaves as CS0",
    "[enforcement][escape]") {
  DaemonFixture env(Case("d", 218));
  FakePod& ef = env.AddPod(1, "asks-ef");  // shared_cores, marked 8 by the operator
  ef.annotations["netqos.io/dscp"] = "46";
  FakePod& reclaimed = env.AddPod(2, "reclaimed");  // a level the operator does not mark
  reclaimed.annotations[kQosKey] = "reclaimed_cores";
  env.WritePods();
  const std::string cg_ef = env.MakeCgroup(ef), cg_reclaimed = env.MakeCgroup(reclaimed);
  // A process of no container (a cgroup of the node's).
  const std::string outsider = env.CgroupRoot() + "/outsider";
  REQUIRE(netqos::testing::ShOk("mkdir -p " + outsider));
  env.StartDaemon({"--qos-level-dscp=shared_cores=8"});
  REQUIRE(WaitFor([&] { return env.ClassOf(cg_ef) && env.ClassOf(cg_reclaimed); }, 5000ms));

  const std::string peer_ip = env.veth().peer_ip;
  Capture cap(env.ns(), env.veth().peer, peer_ip);
  INFO("capture: " << cap.error());
  REQUIRE(cap.WaitReady());
  struct Sender {
    std::string what, cgroup;
    uint16_t udp, tcp;
    int want;
  };
  const std::vector<Sender> senders = {
      {"pod annotated EF (level marked 8)", cg_ef, 41201, 41301, 8},
      {"reclaimed pod, IP_TOS EF", cg_reclaimed, 41202, 41302, 0},
      {"node process, IP_TOS EF", outsider, 41203, 41303, 0},
  };
  for (const auto& s : senders) {
    INFO(s.what);
    CHECK(SendFrom(s.cgroup, peer_ip, s.udp, s.tcp, 0xb8, 20) == 0);  // DSCP 46
  }
  std::this_thread::sleep_for(300ms);
  cap.Stop();
  auto seen = cap.Take();
  for (const auto& s : senders) {
    const auto& tos = seen[s.udp].tos;
    std::printf("%s: %zu packets, DSCP on the wire %d (want %d)\n", s.what.c_str(), tos.size(),
                tos.empty() ? -1 : tos.front() >> 2, s.want);
    INFO(s.what);
    CHECK(tos.size() >= 10);
    for (uint8_t t : tos) CHECK(t >> 2 == s.want);
    for (uint8_t t : seen[s.tcp].tos) CHECK(t >> 2 == s.want);
  }
  const std::string status = StatusNaming(env, {"netqos.io/dscp", "refused"});
  INFO(status);
  CHECK(Contains(status, "netqos.io/dscp"));
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE("tenant policy: system_cores claimed by an unallocated pod does not buy the top priority",
          "[enforcement][escape]") {
  DaemonFixture env(Case("s", 219));
  FakePod& p = env.AddPod(1);
  p.annotations[kQosKey] = "system_cores";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  REQUIRE(WaitFor([&] { return env.ClassOf(cg).has_value(); }, 5000ms));
  const auto entry = env.ClassOf(cg);
  std::printf("unallocated pod claiming system_cores: class %s, level %u\n",
              TcHandleText(entry->priority).c_str(), entry->qos_level);
  CHECK(entry->qos_level == NETQOS_QOS_SHARED);
  CHECK(TcHandleText(entry->priority) == "10:31");  // the shared level's default class
  const std::string status = StatusNaming(env, {kQosKey, "refused"});
  INFO(status);
  CHECK(Contains(status, kQosKey));
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

TEST_CASE("tenant policy: annotation values in netqosctl status are bounded and escaped",
          "[enforcement][escape]") {
  DaemonFixture env(Case("e", 220));
  FakePod& p = env.AddPod(1);
  // A terminal title, a screen clear and a forged line, then 20 KB.
  p.annotations[kQosKey] = "\x1b]0;owned\x07\x1b[2J\nnetqos: all good\r" + std::string(20000, 'A') +
                           "\xc2\x9b"
                           "31m";
  env.WritePods();
  env.MakeCgroup(p);
  env.StartDaemon();
  const std::string status = StatusNaming(env, {kQosKey});
  INFO(status.substr(0, 4000));
  CHECK(Contains(status, kQosKey));
  CHECK(status.find('\x1b') == std::string::npos);
  CHECK(status.find('\x07') == std::string::npos);
  CHECK(status.find('\r') == std::string::npos);
  CHECK(status.find("\xc2\x9b") == std::string::npos);
  CHECK(status.find("\nnetqos: all good") == std::string::npos);
  size_t longest = 0, start = 0;
  for (size_t nl = status.find('\n'); nl != std::string::npos; nl = status.find('\n', start)) {
    longest = std::max(longest, nl - start);
    start = nl + 1;
  }
  std::printf("hostile qos_level: netqosctl status printed %zu bytes, longest line %zu\n",
              status.size(), longest);
  CHECK(longest < 1000);
  const auto json_out = env.Ctl({"status", "--json"});
  CHECK(json_out.output.find('\x1b') == std::string::npos);
  CHECK(json_out.output.size() < 16000);
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant policy: a policy reloaded under traffic lets a namespace borrow, a bad file keeps it, "
    "and the strict policy takes it back, without a restart",
    "[enforcement][traffic]") {
  DaemonFixture env({.tag = "tr", .subnet = 221, .pod_namespace = "tenant", .metrics = true});
  FakePod& p = env.AddPod(1);
  p.annotations["netqos.io/container-ceil"] = "level";
  p.annotations["kubernetes.io/egress-bandwidth"] = "300M";
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  const std::string flag = env.WriteTenantPolicy(R"({"version": 1})");
  env.StartDaemon({flag});
  env.Allocate(p, 50);
  const std::string leaf = LeafOf(env, cg);
  REQUIRE(!leaf.empty());
  const std::string host = env.veth().host;
  auto ceil_mbit = [&] {
    const auto classes = netqos::testing::TcClasses(host);
    return classes.count(leaf) ? classes.at(leaf).ceil_bits / 1'000'000 : 0;
  };
  auto refused = [&] {
    return env.Scrape().ValueOr0(
        "netqos_tenant_refused_annotations",
        {{"namespace", "tenant"}, {"annotation", "netqos.io/container-ceil"}});
  };
  // One bulk flow for the whole case: every policy change below happens under it.
  env.Server(0, 15941);
  env.Client(cg, 0, 15941, 40);
  std::this_thread::sleep_for(kWarmUp);
  auto measure = [&](const char* what, double cap) {
    WireRate w;
    w.Link("wire", env.ns(), env.veth().peer, LinkDirection::kRx).HtbClass("leaf", "", host, leaf);
    MeasureCaps(w, {{"leaf", cap}});
    std::printf("reload under traffic, %s: leaf %s %.1f Mbit/s, wire %.1f (cap %.0f)\n", what,
                leaf.c_str(), w.Mbps("leaf"), w.Mbps("wire"), cap);
    return w.Mbps("leaf");
  };

  CHECK(ceil_mbit() == 50);
  CHECK(refused() == 1);
  CHECK(Within(measure("built-in policy", 50), 50));

  // The namespace may borrow now: the annotation is its ceiling.
  env.WriteTenantPolicy(R"({"version": 1, "namespaces": {"tenant": {"borrow": true}}})");
  REQUIRE(WaitFor([&] { return ceil_mbit() == 300; }, 15000ms).has_value());
  // Borrowing: well above the allocation, never above the annotation (as the bandwidth model's
  // borrowing case measures it: how far it gets depends on the sender's CPU).
  const double borrowing = measure("borrowing allowed", 300);
  CHECK(borrowing > 50 * 2);
  CHECK(borrowing <= 300 * (1 + kCapTolerance));
  CHECK(refused() == 0);
  const auto shown = env.Ctl({"tenant-policy"});
  INFO(shown.output);
  CHECK(shown.exit_code == 0);
  CHECK(Contains(shown.output, "tenant"));
  const auto why = env.Ctl({"cgroup", cg});
  INFO(why.output);
  CHECK(Contains(why.output, "namespace tenant entry applies"));
  CHECK(Contains(why.output, "netqos.io/container-ceil=level honoured"));

  // A file that does not validate: reported, and the last good policy stays in force.
  env.WriteTenantPolicy(R"({"version": 1, "namespaces": {"tenant": {"borrow": "yes"}}})");
  std::string status;
  CHECK(WaitFor(
            [&] {
              status = env.Ctl({"status"}).output;
              return Contains(status, "NOT in force");
            },
            15000ms)
            .has_value());
  INFO(status);
  CHECK(Contains(status, "namespaces.tenant.borrow"));
  CHECK(env.Scrape().Value("netqos_tenant_policy_ok") == 0);
  CHECK(ceil_mbit() == 300);
  const double kept = measure("bad file, last good policy kept", 300);
  CHECK(kept > 50 * 2);
  CHECK(kept <= 300 * (1 + kCapTolerance));

  // Back to the strict policy: held to the allocation again, still under the same flow.
  env.WriteTenantPolicy(R"({"version": 1, "namespaces": {}})");
  REQUIRE(WaitFor([&] { return ceil_mbit() == 50; }, 15000ms).has_value());
  CHECK(Within(measure("strict again", 50), 50));
  CHECK(env.Scrape().Value("netqos_tenant_policy_ok") == 1);
  CHECK(env.Scrape().Value("netqos_tenant_policy_generation") == 3);
  env.StopTraffic();
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant policy: three pods of a namespace with an aggregate are held to it together on the "
    "wire both ways, and a namespace without one pays nothing",
    "[enforcement][traffic]") {
  DaemonFixture env({.tag = "ta", .subnet = 222, .pod_namespace = "agg"});
  std::vector<FakePod*> members;
  for (unsigned i = 1; i <= 3; ++i) members.push_back(&env.AddPod(i));
  FakePod& free_pod = env.AddPod(4, "free");
  free_pod.ns = "free";
  free_pod.annotations["kubernetes.io/egress-bandwidth"] = "200M";
  env.WritePods();
  std::vector<std::string> cgs;
  for (auto* p : members) cgs.push_back(env.MakeCgroup(*p));
  const std::string cg_free = env.MakeCgroup(free_pod);
  const std::string flag = env.WriteTenantPolicy(
      R"({"version": 1, "namespaces": {"agg": {"aggregate": {"egress": "100M", "ingress": "100M"}}}})");
  env.StartDaemon({flag});
  const std::string host = env.veth().host;
  std::vector<std::string> leaves;
  for (const auto& cg : cgs) {
    leaves.push_back(LeafOf(env, cg));
    REQUIRE(!leaves.back().empty());
  }
  const std::string leaf_free = LeafOf(env, cg_free);
  REQUIRE(!leaf_free.empty());
  auto classes = netqos::testing::TcClasses(host);
  // The three pods' leaves under one class (the aggregate), itself under the shared level; the
  // other namespace's leaf right under the level, as without aggregates.
  const std::string aggregate = classes.at(leaves[0]).parent;
  CHECK(aggregate != "10:30");
  for (const auto& leaf : leaves) CHECK(classes.at(leaf).parent == aggregate);
  REQUIRE(classes.count(aggregate) == 1);
  CHECK(classes.at(aggregate).parent == "10:30");
  CHECK(classes.at(aggregate).ceil_bits == 100'000'000);
  CHECK(classes.at(leaf_free).parent == "10:30");
  size_t under_level = 0;
  for (const auto& [handle, c] : classes) under_level += c.parent == "10:30" ? 1 : 0;
  CHECK(under_level == 3);  // the level's default leaf, the aggregate, the free pod's leaf
  const auto why = env.Ctl({"cgroup", cgs[0]});
  INFO(why.output);
  CHECK(Contains(why.output, "its leaf sits under the class " + aggregate));

  // All three compete, and the free pod sends beside them.
  for (unsigned i = 0; i < 3; ++i) {
    env.Server(0, static_cast<uint16_t>(15951 + i));
    env.Client(cgs[i], 0, static_cast<uint16_t>(15951 + i), kRunSeconds);
  }
  env.Server(0, 15955);
  env.Client(cg_free, 0, 15955, kRunSeconds);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("aggregate", "", host, aggregate).HtbClass("free", "", host, leaf_free);
  for (unsigned i = 0; i < 3; ++i) w.HtbClass("pod" + std::to_string(i), "", host, leaves[i]);
  MeasureCaps(w, {{"aggregate", 100}});
  env.StopTraffic();
  const double together = w.Mbps("pod0") + w.Mbps("pod1") + w.Mbps("pod2");
  std::printf(
      "aggregate 100M over three pods: class %s %.1f Mbit/s (pods %.1f + %.1f + %.1f = %.1f); "
      "free pod %.1f of its own 200\n",
      aggregate.c_str(), w.Mbps("aggregate"), w.Mbps("pod0"), w.Mbps("pod1"), w.Mbps("pod2"),
      together, w.Mbps("free"));
  CHECK(Within(w.Mbps("aggregate"), 100));
  CHECK(together <= 100 * (1 + kCapTolerance));
  CHECK(w.Mbps("free") > 100);  // not held by another namespace's aggregate
  CHECK(w.Mbps("free") <= 200 * (1 + kCapTolerance));

  // Receiving: the same three under their aggregate on the IFB (the free pod has no ingress cap:
  // its packets skip the IFB).
  const std::string ifb = env.veth().Ifb();
  auto ifb_classes = netqos::testing::TcClasses(ifb);
  REQUIRE(ifb_classes.count(leaves[0]) == 1);
  const std::string aggregate_in = ifb_classes.at(leaves[0]).parent;
  CHECK(aggregate_in != "10:30");
  for (const auto& leaf : leaves) CHECK(ifb_classes.at(leaf).parent == aggregate_in);
  REQUIRE(ifb_classes.count(aggregate_in) == 1);
  CHECK(ifb_classes.at(aggregate_in).ceil_bits == 100'000'000);
  for (unsigned i = 0; i < 3; ++i) {
    env.Server(0, static_cast<uint16_t>(15961 + i));
    env.Client(cgs[i], 0, static_cast<uint16_t>(15961 + i), kRunSeconds, /*reverse=*/true);
  }
  std::this_thread::sleep_for(kWarmUp);
  WireRate in;
  in.HtbClass("aggregate", "", ifb, aggregate_in);
  for (unsigned i = 0; i < 3; ++i) in.HtbClass("pod" + std::to_string(i), "", ifb, leaves[i]);
  MeasureCaps(in, {{"aggregate", 100}});
  env.StopTraffic();
  const double together_in = in.Mbps("pod0") + in.Mbps("pod1") + in.Mbps("pod2");
  std::printf(
      "aggregate 100M received by three pods: class %s on %s %.1f Mbit/s (pods %.1f + %.1f "
      "+ %.1f = %.1f)\n",
      aggregate_in.c_str(), ifb.c_str(), in.Mbps("aggregate"), in.Mbps("pod0"), in.Mbps("pod1"),
      in.Mbps("pod2"), together_in);
  CHECK(Within(in.Mbps("aggregate"), 100));
  CHECK(together_in <= 100 * (1 + kCapTolerance));
  CHECK(env.DaemonRunning());
  CHECK(env.Leftovers() == "");
}
