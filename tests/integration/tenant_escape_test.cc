// Tenants trying to escape their bandwidth cap, against the real netqosd enforcing on a veth (the
// shared DaemonFixture: a veth into a namespace as the only shaped NIC, container cgroups under
// an extra kubepods root listed by a file:// pod list, a private bpffs, `netqosd --uninstall` and
// a leftover check at the end). Each case is one way out of a cap, and asserts that it is closed:
//
//  1. a process in a child cgroup of a container's cgroup (the class map holds the container's id,
//     not the child's);
//  2. SO_PRIORITY set to another container's HTB leaf handle, from a child cgroup of a capped
//     container and from a process outside every container;
//  3. raw Ethernet frames from an AF_PACKET socket (no cgroup_skb hook sees them), and
//     PACKET_QDISC_BYPASS and AF_XDP, which would skip the qdisc altogether, refused to every
//     pod's process (classified or not);
//  4. UDP datagrams larger than the MTU to a capped receiver (IPv4 fragments carry no ports, so
//     the ingress socket lookup cannot place them);
//  5. a CNI-style pod: its own namespace behind a veth, routed through the host to the NIC
//     (crossing the veth resets skb->priority; what it receives finds no socket in the host
//     namespace), known to the daemon only by its pod IP in the kubelet's list.
//
// Rates are measured as the other traffic tests do: HTB class bytes (wire bytes, what HTB
// enforces) and link bytes over a window after a warm-up, within 2 % of the cap. Where they are
// compared with netqos's own per-container counters (pinned netqos_cgst map), the HTB classes are
// read in-process through netlink, between two reads of the counters, so both describe the same
// moment. The attack traffic comes from netqos_attack_sender (tests/support/attack_sender.cc).
// Every case fails against a netqosd that classifies by the socket's exact cgroup only (the
// numbers it measured are in the commit that added this file). Root only.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bpf/pinned_maps.h"
#include "shaping/netlink/htb_class_stats_reader.h"
#include "support/attack_tool.h"
#include "support/daemon_fixture.h"
#include "support/pod_netns.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::TrafficCounters;
using netqos::bpf::PinnedMaps;
using netqos::shaping::HtbClassStats;
using netqos::shaping::HtbClassStatsReader;
using netqos::testing::AttackTool;
using netqos::testing::CaptureOutput;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::DescribeExit;
using netqos::testing::FakePod;
using netqos::testing::InodeOf;
using netqos::testing::Iperf3Client;
using netqos::testing::Iperf3ClientOptions;
using netqos::testing::kCapTolerance;
using netqos::testing::KillAndReap;
using netqos::testing::kWindow;
using netqos::testing::LinkCounters;
using netqos::testing::LinkDirection;
using netqos::testing::MeasureCaps;
using netqos::testing::OutputCapture;
using netqos::testing::PodNetns;
using netqos::testing::ReadLinkCounters;
using netqos::testing::ShOk;
using netqos::testing::SpawnIn;
using netqos::testing::TrafficClock;
using netqos::testing::WaitFor;
using netqos::testing::WireRate;
using netqos::testing::Within;

constexpr auto kWarmUp = 1200ms;  // past HTB's initial burst and TCP slow start
constexpr int kRunSeconds = 8;    // warm-up + up to two windows (MeasureCaps) + slack

// This file's cases: veth addresses in 10.<subnet>.x.0/24 with subnets no other test uses
// (236-239, 248); the CNI pod's own /24 in 10.249.x.0.
DaemonFixtureOptions Case(const std::string& tag, int subnet) {
  return {.tag = "x" + tag, .subnet = subnet, .pod_namespace = "escape"};
}

// A run of the tool to its end: exit status and output.
struct ToolResult {
  int status = -1;
  std::string output;
};
ToolResult RunTool(std::vector<std::string> args, const std::string& cgroup) {
  AttackTool t(std::move(args), cgroup);
  ToolResult r;
  r.status = t.Wait(10s);
  r.output = t.Output();
  return r;
}

std::string MakeChildCgroup(const std::string& parent, const std::string& name) {
  const std::string dir = parent + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    FAIL("mkdir " << dir << ": " << std::strerror(errno));
  }
  return dir;
}

std::unique_ptr<PinnedMaps> MustOpenPins(const DaemonFixture& env) {
  auto maps = PinnedMaps::Open(env.PinDir());
  INFO(maps.status().message());
  REQUIRE(maps.ok());
  return std::move(maps).value();
}

HtbClassStatsReader MustStatsReader() {
  auto reader = HtbClassStatsReader::Create();
  INFO(reader.status().message());
  REQUIRE(reader.ok());
  return std::move(reader).value();
}

TrafficCounters MustCounters(const PinnedMaps& maps, uint64_t cgroup_id) {
  auto c = maps.ContainerCounters(cgroup_id);
  INFO(c.status().message());
  REQUIRE(c.ok());
  return *c;
}

// The MAC address of `dev` in namespace `ns`.
std::string MacOf(const std::string& ns, const std::string& dev) {
  const std::string out = CaptureOutput("ip -n " + ns + " -o link show dev " + dev);
  const size_t at = out.find("link/ether ");
  REQUIRE(at != std::string::npos);
  return out.substr(at + 11, 17);
}

// The peer's address on veth 0 as a UDP destination.
std::string PeerEndpoint(const DaemonFixture& env, uint16_t port) {
  return env.veth().peer_ip + ":" + std::to_string(port);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant escape: a process in a child cgroup of a capped container is held to the "
    "container's cap",
    "[enforcement][escape]") {
  DaemonFixture env(Case("n", 236));
  const FakePod& p = env.AddPod(1);
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, 50);
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const std::string leaf = TcHandleText(env.ClassOf(cg)->priority);
  // What a container may do itself (it owns its cgroup directory with cgroupns/delegation): a
  // child cgroup, and its traffic from there.
  const std::string nested = MakeChildCgroup(cg, "nested");
  std::this_thread::sleep_for(300ms);  // whatever the daemon does about a new directory
  const auto nested_class = env.ClassOf(nested);
  std::printf("child cgroup %s: class map entry %s\n", nested.c_str(),
              nested_class ? TcHandleText(nested_class->priority).c_str() : "none");

  const std::string host = env.veth().host;
  env.Server(0, 15601);
  env.Client(nested, 0, 15601, kRunSeconds);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("leaf", "", host, leaf).Link("peer rx", env.ns(), env.veth().peer, LinkDirection::kRx);
  MeasureCaps(w, {{"leaf", 50}});
  env.StopTraffic();
  std::printf(
      "child cgroup of a container capped at 50: its leaf %s %.2f Mbit/s, the peer received %.1f "
      "Mbit/s (over %.2f s)\n",
      leaf.c_str(), w.Mbps("leaf"), w.Mbps("peer rx"), w.Get("leaf").seconds);
  CHECK(Within(w.Mbps("leaf"), 50));
  // Nothing passes beside the leaf (veth bytes count a GSO packet's headers once: <= wire).
  CHECK(w.Mbps("peer rx") <= 50 * (1 + kCapTolerance));
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("tenant escape: SO_PRIORITY set to another container's leaf takes nothing from it",
          "[enforcement][escape]") {
  DaemonFixture env(Case("p", 237));
  const FakePod& victim = env.AddPod(1, "victim");
  const FakePod& attacker = env.AddPod(2, "attacker");
  const std::string cg_v = env.MakeCgroup(victim), cg_a = env.MakeCgroup(attacker);
  // A process outside every container (a cgroup of the node's, unclassified).
  const std::string outsider = MakeChildCgroup(env.CgroupRoot(), "outsider");
  env.StartDaemon();
  env.Allocate(victim, 100);
  env.Allocate(attacker, 50);
  REQUIRE(env.WaitLeaf(cg_v, 2000ms).has_value());
  REQUIRE(env.WaitLeaf(cg_a, 2000ms).has_value());
  const uint32_t prio_v = env.ClassOf(cg_v)->priority, prio_a = env.ClassOf(cg_a)->priority;
  const std::string leaf_v = TcHandleText(prio_v), leaf_a = TcHandleText(prio_a);
  const std::string nested = MakeChildCgroup(cg_a, "nested");
  const uint64_t id_v = InodeOf(cg_v);
  const std::unique_ptr<PinnedMaps> maps = MustOpenPins(env);
  HtbClassStatsReader stats = MustStatsReader();
  uint16_t port = 15610;

  // The victim sends bulk TCP; the attacker floods UDP (400 Mbit/s of payload offered, 1400-byte
  // datagrams, to a port nobody listens on, a 4 MiB send buffer) with SO_PRIORITY = the victim's
  // leaf handle. The victim's leaf must carry the victim only: the packets that entered it are
  // the victim's segments (netqos counts a container's packets per segment, as HTB does), within
  // 2 %, and it still sends at the victim's cap.
  auto attack = [&](const std::string& title, const std::string& attacker_cgroup,
                    bool attacker_capped) {
    env.Server(0, ++port);
    env.Client(cg_v, 0, port, kRunSeconds);
    AttackTool flood({"udp-flood", "--dst", PeerEndpoint(env, 9), "--size", "1400", "--priority",
                      std::to_string(prio_v), "--sndbuf", std::to_string(4 << 20), "--mbps", "400",
                      "--seconds", std::to_string(kRunSeconds)},
                     attacker_cgroup);
    std::this_thread::sleep_for(kWarmUp);
    struct Sample {
      TrafficClock::time_point t;
      HtbClassStats v, a;
      TrafficCounters victim;
    };
    // The leaves (netlink, in-process: well under a millisecond) between two reads of the
    // victim's counters, whose mean stands for the moment the leaves were read.
    auto sample = [&] {
      Sample s;
      const TrafficCounters c0 = MustCounters(*maps, id_v);
      const auto t0 = TrafficClock::now();
      auto classes = stats.Read(env.veth().ifindex);
      s.t = t0 + (TrafficClock::now() - t0) / 2;
      const TrafficCounters c1 = MustCounters(*maps, id_v);
      INFO(classes.status().message());
      REQUIRE(classes.ok());
      s.victim.tx_packets = (c0.tx_packets + c1.tx_packets) / 2;
      s.victim.tx_bytes = (c0.tx_bytes + c1.tx_bytes) / 2;
      s.v = (*classes)[prio_v];
      s.a = (*classes)[prio_a];
      return s;
    };
    Sample a = sample(), b;
    for (int window = 0; window < 2; ++window) {  // a second window if the victim ran below
      std::this_thread::sleep_for(kWindow);
      b = sample();
      const double secs = std::chrono::duration<double>(b.t - a.t).count();
      if (static_cast<double>(b.v.bytes - a.v.bytes) * 8 / secs / 1e6 >= 98) break;
      if (window == 0) {
        std::printf("  victim's leaf below its cap, measuring one more window\n");
        a = b;
      }
    }
    const int flood_status = flood.Wait(std::chrono::seconds(kRunSeconds + 5));
    env.StopTraffic();
    const double secs = std::chrono::duration<double>(b.t - a.t).count();
    auto mbps = [&](uint64_t bytes) { return static_cast<double>(bytes) * 8 / secs / 1e6; };
    const double v_mbps = mbps(b.v.bytes - a.v.bytes);
    const double a_mbps = mbps(b.a.bytes - a.a.bytes);
    // What entered the victim's leaf: what it sent, what it still queues, what it dropped.
    auto entered = [](const HtbClassStats& c) { return c.packets + c.backlog_packets + c.drops; };
    const double leaf_packets = static_cast<double>(entered(b.v) - entered(a.v));
    const double victim_segments = static_cast<double>(b.victim.tx_packets - a.victim.tx_packets);
    const double foreign = leaf_packets - victim_segments;
    std::printf(
        "%s: victim's leaf %s %.2f Mbit/s (cap 100), %.0f packets of which %.0f the victim's "
        "segments: %.1f %% foreign; attacker container's leaf %s %.2f Mbit/s (cap 50); flood: %s "
        "(%s)\n",
        title.c_str(), leaf_v.c_str(), v_mbps, leaf_packets, victim_segments,
        leaf_packets > 0 ? 100.0 * foreign / leaf_packets : 0.0, leaf_a.c_str(), a_mbps,
        flood.Output().c_str(), DescribeExit(flood_status).c_str());
    INFO(title);
    CHECK(Within(v_mbps, 100));
    CHECK(std::abs(foreign) <= kCapTolerance * leaf_packets);
    if (attacker_capped) CHECK(Within(a_mbps, 50));
  };

  attack("attacker in a child cgroup of a container capped at 50", nested, true);
  attack("attacker outside every container", outsider, false);
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant escape: raw AF_PACKET frames from a capped container are held to its cap and "
    "counted",
    "[enforcement][escape]") {
  DaemonFixture env(Case("r", 238));
  const FakePod& p = env.AddPod(1);
  const std::string cg = env.MakeCgroup(p);
  // A pod's cgroup netqos has no class entry for (not listed yet, or left unclassified), and a
  // cgroup of the node outside the kubelet's roots.
  const std::string unlisted = MakeChildCgroup(env.CgroupRoot(), "unlisted");
  const netqos::testing::TestCgroup outsider("nqoutside" + std::to_string(::getpid()));
  env.StartDaemon();
  env.Allocate(p, 50);
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const std::string leaf = TcHandleText(env.ClassOf(cg)->priority);
  const uint64_t id = InodeOf(cg);
  const std::string host = env.veth().host;
  const std::unique_ptr<PinnedMaps> maps = MustOpenPins(env);

  // PACKET_QDISC_BYPASS (frames straight to the driver, no qdisc) and AF_XDP (copy mode sends
  // past qdiscs and tc too) are refused to every process under the kubelet's roots, classified
  // or not: an unclassified process of the node may still use them.
  const ToolResult in_container = RunTool({"try-qdisc-bypass", "--ifname", host}, cg);
  const ToolResult in_unlisted = RunTool({"try-qdisc-bypass", "--ifname", host}, unlisted);
  const ToolResult outside = RunTool({"try-qdisc-bypass", "--ifname", host}, outsider.Path());
  const ToolResult xdp_in_container = RunTool({"try-af-xdp"}, cg);
  const ToolResult xdp_in_unlisted = RunTool({"try-af-xdp"}, unlisted);
  const ToolResult xdp_outside = RunTool({"try-af-xdp"}, outsider.Path());
  std::printf(
      "PACKET_QDISC_BYPASS in the container: %s; in an unclassified pod cgroup: %s; outside: "
      "%sAF_XDP in the container: %s; in an unclassified pod cgroup: %s; outside: %s",
      in_container.output.c_str(), in_unlisted.output.c_str(), outside.output.c_str(),
      xdp_in_container.output.c_str(), xdp_in_unlisted.output.c_str(), xdp_outside.output.c_str());
  CHECK_THAT(in_container.output, Catch::StartsWith("qdisc_bypass=EPERM"));
  CHECK_THAT(in_unlisted.output, Catch::StartsWith("qdisc_bypass=EPERM"));
  CHECK(outside.output == "qdisc_bypass=ok\n");
  CHECK_THAT(xdp_in_container.output, Catch::StartsWith("af_xdp=EPERM"));
  CHECK_THAT(xdp_in_unlisted.output, Catch::StartsWith("af_xdp=EPERM"));
  CHECK(xdp_outside.output == "af_xdp=ok\n");

  // Raw Ethernet/IPv4/UDP frames of 1000 bytes to the peer, as fast as the container can write
  // them, on the enforced NIC. A send buffer of 1 MiB (SO_SNDBUFFORCE doubles the 512 KiB asked):
  // ~450 frames in flight, so a sender woken late on a busy machine still finds the leaf
  // backlogged, and fewer than the leaf's queue holds (1000 on a veth), so none is dropped there.
  const std::string peer_mac = MacOf(env.ns(), env.veth().peer);
  AttackTool flood(
      {"raw-flood", "--ifname", host, "--dst-mac", peer_mac, "--src-ip", env.veth().host_ip,
       "--dst-ip", env.veth().peer_ip, "--dst-port", "9", "--size", "1000", "--sndbuf",
       std::to_string(512 << 10), "--seconds", std::to_string(kRunSeconds)},
      cg);
  std::this_thread::sleep_for(kWarmUp);
  // The leaf (netlink, in-process) and what the veth sent (its host end's tx counters, the same
  // frames the peer receives: /proc/net/dev of this namespace), both read between two reads of
  // the container's counters, whose mean stands for that moment. Well under a millisecond.
  HtbClassStatsReader stats = MustStatsReader();
  const uint32_t prio = env.ClassOf(cg)->priority;
  struct Sample {
    TrafficClock::time_point t;
    HtbClassStats leaf;
    LinkCounters sent;
    TrafficCounters counted;
  };
  auto sample = [&] {
    Sample s;
    const TrafficCounters c0 = MustCounters(*maps, id);
    const auto t0 = TrafficClock::now();
    auto classes = stats.Read(env.veth().ifindex);
    s.sent = ReadLinkCounters("", host);
    s.t = t0 + (TrafficClock::now() - t0) / 2;
    const TrafficCounters c1 = MustCounters(*maps, id);
    INFO(classes.status().message());
    REQUIRE(classes.ok());
    s.leaf = (*classes)[prio];
    s.counted.tx_packets = (c0.tx_packets + c1.tx_packets) / 2;
    s.counted.tx_bytes = (c0.tx_bytes + c1.tx_bytes) / 2;
    return s;
  };
  Sample a = sample(), b;
  auto window_mbps = [&] {
    const double secs = std::chrono::duration<double>(b.t - a.t).count();
    return static_cast<double>(b.leaf.bytes - a.leaf.bytes) * 8 / secs / 1e6;
  };
  for (int window = 0; window < 2; ++window) {  // a second window if the leaf ran below its cap
    std::this_thread::sleep_for(kWindow);
    b = sample();
    if (window == 1 || window_mbps() >= 50 * (1 - kCapTolerance)) break;
    std::printf("  below the cap (sender not saturating?), measuring one more window\n");
    a = b;
  }
  const int status = flood.Wait(std::chrono::seconds(kRunSeconds + 5));
  const double secs = std::chrono::duration<double>(b.t - a.t).count();
  auto mbps = [&](uint64_t bytes) { return static_cast<double>(bytes) * 8 / secs / 1e6; };
  const uint64_t leaf_bytes = b.leaf.bytes - a.leaf.bytes;
  const uint64_t leaf_packets = b.leaf.packets - a.leaf.packets;
  const uint64_t sent_bytes = b.sent.tx_bytes - a.sent.tx_bytes;
  const uint64_t sent_packets = b.sent.tx_packets - a.sent.tx_packets;
  const uint64_t counted_bytes = b.counted.tx_bytes - a.counted.tx_bytes;
  const uint64_t counted_packets = b.counted.tx_packets - a.counted.tx_packets;
  std::printf(
      "raw frames from a container capped at 50: its leaf %s %.2f Mbit/s (%llu frames), the veth "
      "sent %.1f Mbit/s (%llu frames) over %.2f s; counted for the container: %llu bytes, %llu "
      "packets (the veth sent %llu bytes); sender: %s(%s)\n",
      leaf.c_str(), mbps(leaf_bytes), static_cast<unsigned long long>(leaf_packets),
      mbps(sent_bytes), static_cast<unsigned long long>(sent_packets), secs,
      static_cast<unsigned long long>(counted_bytes),
      static_cast<unsigned long long>(counted_packets), static_cast<unsigned long long>(sent_bytes),
      flood.Output().c_str(), DescribeExit(status).c_str());
  REQUIRE(sent_packets > 0);  // the frames did leave (else nothing below means anything)
  CHECK(Within(mbps(leaf_bytes), 50));
  CHECK(mbps(sent_bytes) <= 50 * (1 + kCapTolerance));
  // Every frame that left went through the leaf.
  CHECK(static_cast<double>(leaf_packets) ==
        Approx(static_cast<double>(sent_packets)).epsilon(kCapTolerance));
  // Counted as the container's: the frames that left, give or take what was queued at either
  // end of the window, and L2 or L3 length (14 of 1000 bytes).
  CHECK(static_cast<double>(counted_packets) ==
        Approx(static_cast<double>(sent_packets)).epsilon(0.03));
  CHECK(static_cast<double>(counted_bytes) ==
        Approx(static_cast<double>(sent_bytes)).epsilon(0.05));
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "tenant escape: UDP datagrams larger than the MTU to a capped receiver are held to its "
    "ingress cap",
    "[enforcement][escape]") {
  constexpr double kCap = 50;
  constexpr int kSendSeconds = 6;
  constexpr uint16_t kPort = 15631;
  DaemonFixture env(Case("f", 239));
  // A host-network pod: the kubelet lists the node's address as its IP, which names no pod.
  FakePod& p = env.AddPod(1);
  p.host_network = true;
  p.ips = {env.veth().host_ip};
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, static_cast<int>(kCap));
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const std::string leaf = TcHandleText(env.ClassOf(cg)->priority);
  const std::string ifb = env.veth().Ifb();

  // The receiver, in the container: a UDP socket that only receives. The sender, in the peer's
  // namespace: 4000-byte datagrams (three fragments each on the 1500-byte MTU) at 200 Mbit/s.
  AttackTool sink({"udp-sink", "--bind", env.veth().host_ip + ":" + std::to_string(kPort),
                   "--seconds", std::to_string(kSendSeconds + 1)},
                  cg);
  REQUIRE(sink.WaitOutput("listening", 3000ms));
  AttackTool sender({"udp-flood", "--dst", env.veth().host_ip + ":" + std::to_string(kPort),
                     "--size", "4000", "--mbps", "200", "--seconds", std::to_string(kSendSeconds)},
                    "", env.ns());
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("leaf", "", ifb, leaf)
      .Link("sent", env.ns(), env.veth().peer, LinkDirection::kTx)
      .Link("veth rx", "", env.veth().host, LinkDirection::kRx);
  w.Measure(kWindow);
  const int sender_status = sender.Wait(std::chrono::seconds(kSendSeconds + 5));
  const int sink_status = sink.Wait(std::chrono::seconds(kSendSeconds + 5));
  INFO("sender: " << sender.Output() << DescribeExit(sender_status) << "\nsink: " << sink.Output()
                  << DescribeExit(sink_status));
  REQUIRE(sink.Value("received_bytes").has_value());
  const double received_mbps =
      static_cast<double>(*sink.Value("received_bytes")) * 8 / 1e6 / kSendSeconds;
  std::printf(
      "fragmented UDP to a receiver capped at 50: sent %.1f Mbit/s on the wire, the host's veth "
      "received %.1f, IFB leaf %s %.2f Mbit/s, the receiver got %.1f Mbit/s of payload (%llu "
      "datagrams) over the sender's %d s\n",
      w.Mbps("sent"), w.Mbps("veth rx"), leaf.c_str(), w.Mbps("leaf"), received_mbps,
      static_cast<unsigned long long>(sink.Value("received_datagrams").value_or(0)), kSendSeconds);
  REQUIRE(w.Mbps("sent") > 2 * kCap);  // the cap had something to hold
  // Through the leaf, never above the cap. Fragments queued behind it may be dropped (an IFB
  // queue is 32 packets), so datagrams may arrive incomplete: no exact lower bound for the
  // receiver, but the leaf must be carrying the stream.
  CHECK(w.Mbps("leaf") <= kCap * (1 + kCapTolerance));
  CHECK(w.Mbps("leaf") >= kCap * 0.85);
  CHECK(received_mbps <= kCap * (1 + kCapTolerance));
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("tenant escape: a CNI-style pod is held to its allocation in both directions",
          "[enforcement][escape]") {
  constexpr double kCap = 50;
  DaemonFixture env(Case("c", 248));
  // The pod's namespace and veth exist before the daemon starts (so it never sees the pod's
  // host end as a NIC of its own), the remote routes to the pod subnet via the enforced NIC, and
  // the host forwards on these two interfaces only.
  PodNetns pod("c", "10.249." + std::to_string(::getpid() % 100 + 20) + ".");
  const std::string nic_forwarding_path = "/proc/sys/net/ipv4/conf/" + env.host() + "/forwarding";
  const std::string nic_forwarding = CaptureOutput("cat " + nic_forwarding_path);
  pod.EnableForwarding(pod.host_dev());
  pod.EnableForwarding(env.host());
  pod.AddRoute(env.ns(), pod.Subnet(), env.veth().host_ip);
  FakePod& p = env.AddPod(1);
  p.ips = {pod.pod_ip()};
  p.host_network = false;
  env.WritePods();
  const std::string cg = env.MakeCgroup(p);
  env.StartDaemon();
  env.Allocate(p, static_cast<int>(kCap));
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const std::string leaf = TcHandleText(env.ClassOf(cg)->priority);
  const std::string host = env.veth().host, ifb = env.veth().Ifb();

  // The pod's process: in the container's cgroup, then in the pod's namespace.
  auto run = [&](bool reverse, uint16_t port) {
    env.Server(0, port);
    auto client =
        std::make_unique<Iperf3Client>(Iperf3ClientOptions{.server_ip = env.veth().peer_ip,
                                                           .port = port,
                                                           .seconds = kRunSeconds,
                                                           .reverse = reverse,
                                                           .cgroup = cg,
                                                           .netns = pod.ns()});
    std::this_thread::sleep_for(kWarmUp);
    // "rx": what the receiving end got (the pod's eth0 when it receives, the remote's veth when
    // it sends).
    WireRate w;
    if (reverse) {
      w.HtbClass("leaf", "", ifb, leaf).Link("rx", pod.ns(), pod.pod_dev(), LinkDirection::kRx);
    } else {
      w.HtbClass("leaf", "", host, leaf).Link("rx", env.ns(), env.veth().peer, LinkDirection::kRx);
    }
    MeasureCaps(w, {{"leaf", kCap}});
    client.reset();
    env.StopTraffic();
    // Traffic flowed at all (else the pod's route or the host's forwarding is broken, and no
    // rate below says anything about enforcement).
    INFO((reverse ? "pod receiving" : "pod sending") << ": " << w.Mbps("rx") << " Mbit/s");
    REQUIRE(w.Mbps("rx") > kCap * 0.5);
    return w;
  };
  const WireRate egress = run(false, 15641);
  const WireRate ingress = run(true, 15642);
  std::printf(
      "CNI pod %s capped at 50: egress leaf %s on %s %.2f Mbit/s (the remote received %.1f); "
      "ingress leaf %s on %s %.2f Mbit/s (the pod received %.1f)\n",
      pod.pod_ip().c_str(), leaf.c_str(), host.c_str(), egress.Mbps("leaf"), egress.Mbps("rx"),
      leaf.c_str(), ifb.c_str(), ingress.Mbps("leaf"), ingress.Mbps("rx"));
  CHECK(Within(egress.Mbps("leaf"), kCap));
  CHECK(egress.Mbps("rx") <= kCap * (1 + kCapTolerance));
  CHECK(Within(ingress.Mbps("leaf"), kCap));
  CHECK(ingress.Mbps("rx") <= kCap * (1 + kCapTolerance));

  // The pod's network goes first (its host end and namespace), and the forwarding settings with
  // it; then the daemon's world.
  pod.Remove();
  CHECK_FALSE(ShOk("ip link show dev " + pod.host_dev()));
  CHECK_FALSE(ShOk("ip netns pids " + pod.ns()));
  CHECK(CaptureOutput("cat " + nic_forwarding_path) == nic_forwarding);
  CHECK(env.DaemonRunning());
  const std::string left = env.Leftovers();
  CHECK(left == "");
}
