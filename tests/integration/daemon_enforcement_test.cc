// The real netqosd with enforcement on, driven like a kubelet would drive it: allocations through
// its gRPC socket (netqosctl), the pod list from a file:// PodList this test writes and rewrites,
// container cgroups under an extra kubepods root (--addition-cgroup-paths), a veth into a network
// namespace as the only NIC, a private bpffs for the pins, temp dirs for socket and state (the
// shared DaemonFixture). What is asserted is what the daemon does to the kernel: the pinned class
// map (read with libbpf), the HTB classes on the veth and its IFB (tc), the bytes those classes
// send while iperf3 runs, and its log. Every object is removed on scope exit (also when a test
// fails) and each case checks at the end that `netqosd --uninstall` left nothing behind. Root only.
#include <bpf/bpf.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/constants.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"
#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::testing::CaptureOutput;
using netqos::testing::CountLines;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::FakeContainerId;
using netqos::testing::FakePod;
using netqos::testing::InodeOf;
using netqos::testing::IsContainerLeaf;
using netqos::testing::kCapTolerance;
using netqos::testing::kWindow;
using netqos::testing::LinkDirection;
using netqos::testing::MeasureCaps;
using netqos::testing::ShOk;
using netqos::testing::TcClasses;
using netqos::testing::TrafficClock;
using netqos::testing::UniquePrefix;
using netqos::testing::Veth;
using netqos::testing::WaitFor;
using netqos::testing::WireRate;
using netqos::testing::Within;
using nlohmann::json;

constexpr char kClassIdKey[] =
    "katalyst.kubewharf.io/net_class_id";  // kDefaultNetClassAnnotationKey
constexpr auto kWarmUp = 1200ms;           // past HTB's initial burst and TCP slow start

// This file's cases: veth addresses in 10.23<n>.x.0/24 (and 10.229.x.0/24); --uninstall must put
// back the ip_forward_update_priority the daemon found.
DaemonFixtureOptions Case(const std::string& tag, int n) {
  return {.tag = "d" + tag, .subnet = 230 + n, .compare_forward_sysctl = true};
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The NIC an allocation landed on (its nic_name annotation).
std::string AllocatedNic(const json& alloc) {
  return alloc.at("allocation_result")
      .at("resource.katalyst.kubewharf.io/net_bandwidth")
      .at("annotations")
      .value("qrm.katalyst.kubewharf.io/nic_name", "");
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "daemon enforcement: a container cgroup created after its Allocate is classified within 2 s",
    "[enforcement]") {
  DaemonFixture env(Case("a", 1));
  // Pod 1: the kubelet already lists the container id, the runtime has not created the cgroup.
  // Pod 2: the kubelet lists the pod but not the container yet (no containerID).
  env.AddPod(1);
  env.AddPod(2).containers[0].id = "";
  env.WritePods();
  env.StartDaemon();

  const FakePod& p1 = env.pods[0];
  env.Allocate(p1, 100);
  std::this_thread::sleep_for(200ms);
  auto t0 = TrafficClock::now();
  const std::string cg1 = env.MakeCgroup(p1);
  auto took1 = env.WaitLeaf(cg1, 2000ms, t0);
  REQUIRE(took1.has_value());
  std::printf("late cgroup, id already listed: class entry with leaf after %.1f ms\n", *took1);
  CHECK(*took1 < 1500);
  const uint32_t prio1 = env.ClassOf(cg1)->priority;

  // Pod 2: Allocate, then the runtime creates the cgroup, then (300 ms later) the kubelet's pod
  // list gets the container id. The watcher's pending retry picks it up.
  FakePod& p2 = env.pods[1];
  env.Allocate(p2, 150);
  p2.containers[0].id = FakeContainerId(2);
  std::this_thread::sleep_for(200ms);
  t0 = TrafficClock::now();
  const std::string cg2 = env.MakeCgroup(p2);
  std::this_thread::sleep_for(300ms);
  env.WritePods();
  auto took2 = env.WaitLeaf(cg2, 2000ms, t0);
  REQUIRE(took2.has_value());
  std::printf("late cgroup, id listed 300 ms after mkdir: class entry with leaf after %.1f ms\n",
              *took2);
  CHECK(*took2 < 1500);
  const uint32_t prio2 = env.ClassOf(cg2)->priority;
  CHECK(prio1 != prio2);

  // Both leaves exist on the veth and on its IFB, at the allocated rates.
  std::this_thread::sleep_for(100ms);
  auto eg = TcClasses(env.veth().host);
  auto in = TcClasses(env.veth().Ifb());
  for (auto [prio, mbps] : {std::pair{prio1, 100ull}, std::pair{prio2, 150ull}}) {
    INFO("leaf " << TcHandleText(prio));
    REQUIRE(eg.count(TcHandleText(prio)) == 1);
    CHECK(eg[TcHandleText(prio)].rate_bits == mbps * 1000000);
    CHECK(eg[TcHandleText(prio)].ceil_bits == mbps * 1000000);
    REQUIRE(in.count(TcHandleText(prio)) == 1);
    CHECK(in[TcHandleText(prio)].rate_bits == mbps * 1000000);
  }
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: ingress and egress caps of two containers hold at once and an unallocated "
    "one is not capped",
    "[enforcement]") {
  DaemonFixture env(Case("b", 2));
  for (unsigned n : {1, 2, 3}) env.AddPod(n);
  const std::string cg_a = env.MakeCgroup(env.pods[0]);
  const std::string cg_b = env.MakeCgroup(env.pods[1]);
  const std::string cg_c = env.MakeCgroup(env.pods[2]);
  env.StartDaemon();
  env.Allocate(env.pods[0], 50);
  env.Allocate(env.pods[1], 200);
  REQUIRE(env.WaitLeaf(cg_a, 2000ms).has_value());
  REQUIRE(env.WaitLeaf(cg_b, 2000ms).has_value());
  const std::string leaf_a = TcHandleText(env.ClassOf(cg_a)->priority);
  const std::string leaf_b = TcHandleText(env.ClassOf(cg_b)->priority);
  // The unallocated container is classified (counted, its level's default leaf), not capped.
  auto c_class = env.ClassOf(cg_c);
  REQUIRE(c_class.has_value());
  CHECK_FALSE(IsContainerLeaf(c_class->priority));
  const std::string leaf_c = TcHandleText(c_class->priority);
  CHECK(leaf_c == "10:31");  // shared_cores' default leaf

  const std::string host = env.veth().host, ifb = env.veth().Ifb();
  uint16_t port = 15400;
  struct Flow {
    std::string name, cgroup, dev, leaf;
    bool reverse = false;
    double cap = 0;  // 0: not capped by a leaf
  };
  // Runs the flows at once (C, unallocated, paced at 800 Mbit/s alongside) and measures each on
  // its HTB leaf: egress on the veth, ingress (iperf3 -R) on the veth's IFB.
  auto run = [&](const std::string& title, std::vector<Flow> flows, bool exact = true) {
    flows.push_back({"c egress", cg_c, host, leaf_c, false, 0});
    std::map<std::string, double> caps;
    WireRate w;
    for (const auto& f : flows) {
      env.Server(0, ++port);
      std::vector<std::string> extra;
      if (f.cap == 0) extra = {"-b", "800M"};
      env.Client(f.cgroup, 0, port, 9, f.reverse, extra);  // warm-up + up to two windows
      w.HtbClass(f.name, "", f.dev, f.leaf);
      if (f.cap > 0 && exact) caps[f.name] = f.cap;
    }
    std::this_thread::sleep_for(kWarmUp);
    MeasureCaps(w, caps);
    env.StopTraffic();
    std::printf("%s (HTB leaf bytes over %.2f s):\n", title.c_str(), w.Get(flows[0].name).seconds);
    for (const auto& f : flows) {
      std::printf("  %-10s %8.2f Mbit/s (cap %s)\n", f.name.c_str(), w.Mbps(f.name),
                  f.cap > 0 ? std::to_string(static_cast<int>(f.cap)).c_str() : "none");
    }
    return w;
  };

  {
    WireRate w = run("A receives while B sends", {{"a ingress", cg_a, ifb, leaf_a, true, 50},
                                                  {"b egress", cg_b, host, leaf_b, false, 200}});
    CHECK(Within(w.Mbps("a ingress"), 50));
    CHECK(Within(w.Mbps("b egress"), 200));
    CHECK(w.Mbps("c egress") > 400);  // paced at 800: well above any leaf here
  }
  {
    WireRate w = run("A sends while B receives", {{"a egress", cg_a, host, leaf_a, false, 50},
                                                  {"b ingress", cg_b, ifb, leaf_b, true, 200}});
    CHECK(Within(w.Mbps("a egress"), 50));
    CHECK(Within(w.Mbps("b ingress"), 200));
    CHECK(w.Mbps("c egress") > 400);
  }
  {
    // One container both ways at once: each direction's leaf also carries the other flow's
    // ACKs, queued behind its own bulk data (FIFO leaves), so the receiving side may run below
    // its cap; the caps must still never be exceeded.
    WireRate w = run(
        "A sends and receives at once",
        {{"a egress", cg_a, host, leaf_a, false, 50}, {"a ingress", cg_a, ifb, leaf_a, true, 50}},
        /*exact=*/false);
    CHECK(w.Mbps("a egress") <= 50 * (1 + kCapTolerance));
    CHECK(w.Mbps("a ingress") <= 50 * (1 + kCapTolerance));
  }
  {
    // What C receives skips the IFB: nothing there could hold it back (its level's class borrows
    // up to the link), so its packets do not pay the detour. A's, with an ingress leaf, go there.
    CHECK(env.ClassOf(cg_a)->flags == NETQOS_CLASS_F_INGRESS_SHAPED);
    CHECK(env.ClassOf(cg_c)->flags == NETQOS_CLASS_F_NO_LEAF);  // and no leaf of its own
    env.Server(0, ++port);
    env.Client(cg_c, 0, port, 9, /*reverse=*/true, {"-b", "800M"});
    WireRate w;
    w.HtbClass("IFB", "", ifb, "10:1").Link("veth rx", "", host, LinkDirection::kRx);
    std::this_thread::sleep_for(kWarmUp);
    w.Measure(std::chrono::seconds(2));
    env.StopTraffic();
    std::printf("C receives: %.1f Mbit/s on the veth, %.3f Mbit/s through the IFB\n",
                w.Mbps("veth rx"), w.Mbps("IFB"));
    CHECK(w.Mbps("veth rx") > 400);
    CHECK(w.Mbps("IFB") < 1);
  }
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: class id, RemovePod, cgroup removal and a new Allocate take effect live",
    "[enforcement]") {
  DaemonFixture env(Case("c", 3));
  FakePod& p1 = env.AddPod(1);
  FakePod& p2 = env.AddPod(2);
  p1.annotations[kClassIdKey] = "7";
  env.WritePods();
  const std::string cg1 = env.MakeCgroup(p1);
  env.StartDaemon();
  env.Allocate(p1, 100);
  REQUIRE(env.WaitLeaf(cg1, 2000ms).has_value());
  CHECK(env.ClassOf(cg1)->net_class_id == 7);
  const uint32_t prio1 = env.ClassOf(cg1)->priority;

  // (a) The pod's class-id annotation changes: the kubelet's list is re-read (every
  // min(resync, 5 s) = 2 s here) and the entry follows, without a restart or an Allocate.
  p1.annotations[kClassIdKey] = "9";
  auto t0 = TrafficClock::now();
  env.WritePods();
  auto took = WaitFor(
      [&] {
        auto c = env.ClassOf(cg1);
        return c && c->net_class_id == 9;
      },
      6500ms, t0);
  REQUIRE(took.has_value());
  std::printf("class id annotation 7 -> 9: in the class map after %.0f ms\n", *took);
  CHECK(*took < 3500);
  CHECK(env.ClassOf(cg1)->priority == prio1);  // same leaf

  // (d) A second Allocate adds a leaf while the first container's flow keeps its cap.
  const std::string host = env.veth().host;
  env.Server(0, 15411);
  env.Client(cg1, 0, 15411, 6, false);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("p1", "", host, TcHandleText(prio1));
  w.Start();
  const auto window_end = TrafficClock::now() + kWindow;
  std::this_thread::sleep_for(500ms);
  env.Allocate(p2, 150);
  t0 = TrafficClock::now();
  const std::string cg2 = env.MakeCgroup(p2);
  auto took2 = env.WaitLeaf(cg2, 2000ms, t0);
  std::this_thread::sleep_until(window_end);
  w.Stop();
  env.StopTraffic();
  REQUIRE(took2.has_value());
  std::printf(
      "second Allocate mid-flow: its leaf after %.1f ms; first container %.2f Mbit/s "
      "(cap 100) over %.2f s around it\n",
      *took2, w.Mbps("p1"), w.Get("p1").seconds);
  CHECK(Within(w.Mbps("p1"), 100));
  CHECK(env.ClassOf(cg1)->priority == prio1);
  const uint32_t prio2 = env.ClassOf(cg2)->priority;
  CHECK(prio2 != prio1);
  {
    auto eg = TcClasses(host);
    REQUIRE(eg.count(TcHandleText(prio2)) == 1);
    CHECK(eg[TcHandleText(prio2)].rate_bits == 150000000ull);
    CHECK(eg[TcHandleText(prio1)].rate_bits == 100000000ull);
  }

  // (c) The runtime removes container 2's cgroup: its entry goes at once (inotify).
  const uint64_t id2 = InodeOf(cg2);
  t0 = TrafficClock::now();
  REQUIRE(::rmdir(cg2.c_str()) == 0);
  took = WaitFor([&] { return !env.Class(id2).has_value(); }, 1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("rmdir of a container cgroup: entry gone after %.1f ms\n", *took);

  // (b) RemovePod of pod 1 (still listed by the kubelet, cgroup still there): entry and leaf go.
  const uint64_t id1 = InodeOf(cg1);
  t0 = TrafficClock::now();
  env.RemovePod(p1);
  took = WaitFor([&] { return !env.Class(id1).has_value(); }, 1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("RemovePod: entry gone after %.1f ms\n", *took);
  took = WaitFor(
      [&] {
        return TcClasses(host).count(TcHandleText(prio1)) == 0 &&
               TcClasses(env.veth().Ifb()).count(TcHandleText(prio1)) == 0;
      },
      1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("RemovePod: leaf %s gone from the veth and the IFB after %.1f ms\n",
              TcHandleText(prio1).c_str(), *took);
  // And it stays gone across resyncs although the kubelet still lists the pod (terminating).
  std::this_thread::sleep_for(2500ms);
  CHECK_FALSE(env.Class(id1).has_value());
  CHECK(TcClasses(host).count(TcHandleText(prio1)) == 0);
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: a foreign root qdisc, a missing NIC and a missing pod list are reported "
    "once and the rest keeps working",
    "[enforcement]") {
  // The foreign NIC sorts first, so the daemon tries it first on every pass (and must neither
  // lose the other NIC's shaping nor the sysctl's old value over it); allocations go to the last.
  // A NIC that does not exist is in --enforce-nics too.
  const std::string ghost = UniquePrefix() + "ghost";
  DaemonFixtureOptions options = Case("d", 4);
  options.veths = 2;
  options.nic_selection = "last";
  options.extra_enforce_nics = {ghost};
  DaemonFixture env(options);
  const Veth& foreign = env.veth(0);
  const Veth& good = env.veth(1);
  ShOk("tc qdisc add dev " + foreign.host +
       " root handle 77: tbf rate 1gbit burst 64kb latency 50ms");
  const std::string foreign_before = CaptureOutput("tc qdisc show dev " + foreign.host + " root");
  REQUIRE(foreign_before.find("tbf 77:") != std::string::npos);
  env.AddPod(1);
  const std::string cg = env.MakeCgroup(env.pods[0]);
  // A value the daemon changes, so --uninstall must restore it although the first NIC it tried
  // failed after the sysctl was set.
  env.SetForwardPriorityBefore(1);
  // Nothing is capped on the foreign NIC: without --shape-idle-nics it would keep its own root,
  // which is no problem to report.
  env.StartDaemon({"--keep-forwarded-priority", "--shape-idle-nics"});
  const json alloc = env.Allocate(env.pods[0], 100);
  REQUIRE(AllocatedNic(alloc) == good.host);
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const uint32_t prio = env.ClassOf(cg)->priority;

  // (a) The foreign qdisc: reported naming the NIC and the flag, left as it was; the other veth
  // is shaped (measured while the daemon keeps retrying the foreign one on its resyncs).
  env.Server(1, 15421);
  env.Client(cg, 1, 15421, 6, false);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("good", "", good.host, TcHandleText(prio));
  MeasureCaps(w, {{"good", 100}});
  env.StopTraffic();
  std::printf("foreign qdisc on %s: %s still capped at %.2f Mbit/s (cap 100)\n",
              foreign.host.c_str(), good.host.c_str(), w.Mbps("good"));
  CHECK(Within(w.Mbps("good"), 100));

  // (c) The kubelet's pod list disappears: reported once, entries kept across resyncs.
  env.DeletePods();
  std::this_thread::sleep_for(5000ms);  // two resyncs, two pod-list refreshes at least
  auto kept = env.ClassOf(cg);
  REQUIRE(kept.has_value());
  CHECK(kept->priority == prio);
  CHECK(env.Ctl({"plugin-info"}).exit_code == 0);
  const std::string log = env.Log();
  // "enforcement problem object=<key> ..." when it appears, "... resolved object=<key>" when it
  // clears: each of these three appears once and does not flap.
  auto reported = [&](const std::string& key) {
    return CountLines(log, {"enforcement problem object=" + key + " "});
  };
  auto resolved = [&](const std::string& key) {
    return CountLines(log, {"enforcement problem resolved object=" + key + " "});
  };
  const std::string foreign_key = "nic:" + foreign.host, ghost_key = "nic:" + ghost;
  std::printf(
      "problem lines after >= 4 resyncs: foreign qdisc %zu, missing NIC %zu, pod list %zu\n",
      reported(foreign_key), reported(ghost_key), reported("kubelet"));
  CHECK(reported(foreign_key) == 1);
  CHECK(CountLines(
            log, {"enforcement problem object=" + foreign_key + " ", "--replace-root-qdisc"}) == 1);
  CHECK(resolved(foreign_key) == 0);
  CHECK(reported(ghost_key) == 1);
  CHECK(resolved(ghost_key) == 0);
  CHECK(reported("kubelet") == 1);
  CHECK(resolved("kubelet") == 0);
  CHECK(CaptureOutput("tc qdisc show dev " + foreign.host + " root") == foreign_before);
  CHECK(CaptureOutput("tc qdisc show dev " + good.host + " root").find("htb 10:") !=
        std::string::npos);

  // The pod list comes back: the problem is resolved (logged), the entry is still the same.
  env.WritePods();
  auto took = WaitFor(
      [&] { return Count(env.Log(), "enforcement problem resolved object=kubelet") == 1; }, 3500ms);
  CHECK(took.has_value());
  if (took) std::printf("pod list restored: problem resolved after %.0f ms\n", *took);
  CHECK(env.ClassOf(cg)->priority == prio);
  CHECK(env.DaemonRunning());

  std::string left = env.Uninstall();
  // --uninstall, given the foreign NIC in --enforce-nics, left its qdisc alone too.
  CHECK(CaptureOutput("tc qdisc show dev " + foreign.host + " root") == foreign_before);
  left += env.Leftovers();
  CHECK(left == "");
  CHECK(Count(env.Log(), "replacing foreign root qdisc") == 0);
}

TEST_CASE(
    "daemon enforcement: systemd cgroup driver with a .slice extra root classifies containers",
    "[enforcement]") {
  DaemonFixtureOptions options = Case("s", 5);
  options.systemd_driver = true;
  DaemonFixture env(options);
  env.AddPod(1);
  env.AddPod(2);
  // Container 2 runs before the daemon starts, container 1 starts after its Allocate.
  const std::string cg2 = env.MakeCgroup(env.pods[1]);
  REQUIRE(cg2.find(".slice/") != std::string::npos);
  REQUIRE(cg2.find("/cri-containerd-") != std::string::npos);
  env.StartDaemon();
  env.Allocate(env.pods[0], 120);
  env.Allocate(env.pods[1], 80);
  const auto t0 = TrafficClock::now();
  const std::string cg1 = env.MakeCgroup(env.pods[0]);
  auto took = env.WaitLeaf(cg1, 2000ms, t0);
  REQUIRE(took.has_value());
  std::printf("systemd layout %s: class entry with leaf after %.1f ms\n", cg1.c_str(), *took);
  CHECK(*took < 1500);
  REQUIRE(env.WaitLeaf(cg2, 2000ms).has_value());
  auto eg = TcClasses(env.veth().host);
  const std::string leaf1 = TcHandleText(env.ClassOf(cg1)->priority);
  const std::string leaf2 = TcHandleText(env.ClassOf(cg2)->priority);
  REQUIRE(eg.count(leaf1) == 1);
  REQUIRE(eg.count(leaf2) == 1);
  CHECK(eg[leaf1].rate_bits == 120000000ull);
  CHECK(eg[leaf2].rate_bits == 80000000ull);
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: an Allocate served while enforcement is still starting is enforced "
    "without waiting for the resync",
    "[enforcement]") {
  DaemonFixtureOptions options = Case("w", 6);
  options.subnet = 229;  // 236 is tenant_escape_test's
  options.wait_serving = false;
  // A change lost between the first pass's read of the allocations and the enforcer taking
  // changes would wait for the resync: a long one makes that a failure here.
  options.resync_seconds = 600;
  DaemonFixture env(options);
  env.AddPod(1);
  env.WritePods();
  const FakePod& p = env.pods[0];
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  // The plugin socket is served before the dataplane is opened: Allocate as soon as it answers,
  // from this process (a netqosctl process would take longer to start than the dataplane).
  namespace rp = ::resourceplugin::v1alpha1;
  rp::ResourceRequest req;
  req.set_pod_uid(p.uid);
  req.set_pod_namespace(p.ns);
  req.set_pod_name(p.name);
  req.set_container_name(p.containers.at(0).name);
  req.set_container_type(rp::MAIN);
  req.set_resource_name(netqos::core::kResourceName);
  (*req.mutable_resource_requests())[netqos::core::kResourceName] = 90;
  (*req.mutable_annotations())[netqos::core::kQosLevelKey] = "shared_cores";
  (*req.mutable_labels())[netqos::core::kQosLevelKey] = "shared_cores";
  const auto t0 = TrafficClock::now();
  bool allocated = false;
  std::string last_error;
  while (!allocated && netqos::testing::MsSince(t0) < 15000) {
    if (access(env.Socket().c_str(), F_OK) != 0) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    auto stub = rp::ResourcePlugin::NewStub(
        grpc::CreateChannel("unix://" + env.Socket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 2s);
    rp::ResourceAllocationResponse resp;
    const grpc::Status st = stub->Allocate(&ctx, req, &resp);
    allocated = st.ok();
    if (!allocated) {
      last_error = st.error_message();
      REQUIRE(env.DaemonRunning());
      std::this_thread::sleep_for(1ms);
    }
  }
  INFO(last_error);
  REQUIRE(allocated);
  const auto t_alloc = TrafficClock::now();
  std::string status = env.Ctl({"status"}).output;
  if (status.find("STARTING") != std::string::npos) {
    CHECK_THAT(status, Catch::Contains("what was pinned keeps enforcing"));
  }
  auto took = env.WaitLeaf(cg, 3000ms, t_alloc);
  REQUIRE(took.has_value());
  std::printf("class entry with leaf %.1f ms after the Allocate\n", *took);
  const uint32_t prio = env.ClassOf(cg)->priority;
  auto eg = TcClasses(env.veth().host);
  REQUIRE(eg.count(TcHandleText(prio)) == 1);
  CHECK(eg[TcHandleText(prio)].rate_bits == 90000000ull);
  // Where the Allocate fell, by the order of the daemon's log lines (one logger, in order).
  const std::string log = env.Log();
  const size_t allocated_at = log.find("allocated pod=");
  const size_t starting_at = log.find("enforcement starting pin_dir=");
  const size_t started_at = log.find("enforcement started after_ms=");
  REQUIRE(allocated_at != std::string::npos);
  REQUIRE(starting_at != std::string::npos);
  REQUIRE(started_at != std::string::npos);
  std::printf("Allocate answered %s; %s\n",
              allocated_at < starting_at  ? "before the enforcer existed"
              : allocated_at < started_at ? "while the enforcer was being made (adoption)"
                                          : "after enforcement started (window missed this time)",
              log.substr(started_at, log.find('\n', started_at) - started_at).c_str());
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: a deleted class map entry is repaired by the next resync, a deleted HTB "
    "leaf by the next full resync",
    "[enforcement]") {
  DaemonFixtureOptions options = Case("r", 7);
  options.subnet = 223;  // 237 is tenant_escape_test's
  DaemonFixture env(options);
  FakePod& p1 = env.AddPod(1);
  env.WritePods();
  const std::string cg1 = env.MakeCgroup(p1);
  // A resync every 2 s (the fixture's), a full one every 6 s.
  env.StartDaemon({"--enforcement-full-resync-period=6"});
  env.Allocate(p1, 100);
  REQUIRE(env.WaitLeaf(cg1, 3000ms).has_value());
  const uint32_t prio = env.ClassOf(cg1)->priority;
  const std::string leaf = TcHandleText(prio);
  const std::string host = env.veth().host;
  REQUIRE(WaitFor([&] { return TcClasses(host).count(leaf) == 1; }, 2000ms));

  // (a) Someone (root) deletes the container's class map entry: the next resync writes it back.
  {
    const int fd = env.ClassMapFd();
    REQUIRE(fd >= 0);
    const uint64_t id = InodeOf(cg1);
    CHECK(bpf_map_delete_elem(fd, &id) == 0);
    ::close(fd);
  }
  REQUIRE_FALSE(env.ClassOf(cg1).has_value());
  auto entry_back = WaitFor(
      [&] {
        auto c = env.ClassOf(cg1);
        return c && c->priority == prio;
      },
      3500ms);
  REQUIRE(entry_back);
  std::printf("class map entry deleted: written back after %.0f ms (resync every 2 s)\n",
              *entry_back);

  // (b) Someone deletes the container's HTB leaf on the NIC: the full resync re-applies the tree.
  REQUIRE(ShOk("tc class del dev " + host + " classid " + leaf));
  REQUIRE(TcClasses(host).count(leaf) == 0);
  auto leaf_back = WaitFor([&] { return TcClasses(host).count(leaf) == 1; }, 9000ms);
  REQUIRE(leaf_back);
  std::printf("HTB leaf deleted: applied again after %.0f ms (full resync every 6 s)\n",
              *leaf_back);
  CHECK(TcClasses(host)[leaf].rate_bits == 100000000ull);
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}
