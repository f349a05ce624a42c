// Enforcement with real traffic, at component level (Dataplane + HtbPlanner/HtbInstaller +
// AttachIngress, no daemon): iperf3 flows from and to processes placed in test cgroups, over a
// veth pair from the host into a namespace, measured as HTB class bytes and link bytes over a
// window after a warm-up. Each test has its own bpffs instance, cgroups, namespace and ports;
// everything is removed on scope exit, also on failure. Root only.
//
// Byte accounting, which the assertions rely on:
//  - HTB class bytes count a GSO packet as its segments, each with its own headers: wire bytes
//    (without preamble/FCS). HTB enforces its rate on the same count, so they match the cap.
//  - veth link counters add skb->len once per skb, so a GSO packet's headers count once.
//  - iperf3 reports TCP payload; 1448 of every 1514 wire bytes at MTU 1500 with timestamps.
//  - the dataplane counters add skb->len as the hook sees it: L3 (IP header on) at cgroup egress,
//    L2 (Ethernet header on) at tc ingress, once per skb, GSO packets included.
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "shaping/htb_plan.h"
#include "shaping/netlink/htb_class_stats_reader.h"
#include "shaping/netlink/htb_installer.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/htb_planner.h"
#include "support/netns.h"
#include "support/traffic.h"

namespace {

using namespace netqos::shaping;
using netqos::TcHandleText;
using netqos::bpf::AttachIngress;
using netqos::bpf::Dataplane;
using netqos::bpf::DetachIngress;
using netqos::bpf::IngressAttached;
using netqos::testing::HtbPlanner;
using netqos::testing::Iperf3Client;
using netqos::testing::Iperf3ClientOptions;
using netqos::testing::Iperf3Result;
using netqos::testing::Iperf3Server;
using netqos::testing::LinkDirection;
using netqos::testing::NetnsFixture;
using netqos::testing::OutputCapture;
using netqos::testing::PrivateBpffs;
using netqos::testing::ShOk;
using netqos::testing::SpawnIn;
using netqos::testing::TestCgroup;
using netqos::testing::TrafficClock;
using netqos::testing::UniquePrefix;
using netqos::testing::WireRate;
using std::chrono::milliseconds;

// The plans' link rate: high enough that the default leaf (ceil = link) never caps a flow here.
constexpr uint64_t kLinkMbps = 10000;
constexpr auto kWarmUp = milliseconds(1200);  // past HTB's initial burst and TCP start-up
constexpr auto kWindow = milliseconds(3000);
constexpr int kRunSeconds = 5;  // warm-up + window + slack
// Where several leaves share the machine's CPU: up to this many windows, each leaf must reach its
// cap in one of them and exceed it in none (see the 50, 200 and 1000 Mbit/s case).
constexpr int kMaxWindows = 5;
constexpr int kLongRunSeconds = 18;  // warm-up + kMaxWindows windows + slack
constexpr double kCapTolerance = 0.02;
// Ethernet 14 + IPv4 20 + TCP 32 (with timestamps): the headers of every segment on the wire.
constexpr uint64_t kSegmentHeaders = 66;
constexpr double kPayloadPerWire = 1448.0 / 1514.0;

// One test's world: pins, a cgroup subtree the egress program attaches to, and a veth pair from
// the host (host end `host`, 10.24<subnet>.<n>.1) into namespace `ns` (`peer`, .2). Members are
// destroyed bottom-up: cgroups (their processes killed), then the namespace, then the pins.
struct TrafficEnv {
  PrivateBpffs bpffs;
  std::string pin_dir;
  NetnsFixture fx;
  std::string ns, host, peer, host_ip, peer_ip;
  int host_ifindex = 0;
  TestCgroup root;

  TrafficEnv(const std::string& tag, int subnet)
      : pin_dir(bpffs.PinDir()), root("netqos-traffic-" + std::to_string(::getpid()) + "-" + tag) {
    const std::string p = UniquePrefix() + "t" + tag;
    ns = p;
    host = p + "h";
    peer = p + "p";
    const std::string net =
        "10.24" + std::to_string(subnet) + "." + std::to_string(::getpid() % 200 + 20) + ".";
    host_ip = net + "1";
    peer_ip = net + "2";
    fx.AddNamespace(ns);
    fx.AddVeth(host, peer, ns);
    fx.AddAddress("", host, host_ip + "/24");
    fx.AddAddress(ns, peer, peer_ip + "/24");
    fx.SetUp("", host, true);
    fx.SetUp(ns, peer, true);
    fx.SetUp(ns, "lo", true);
    host_ifindex = static_cast<int>(::if_nametoindex(host.c_str()));
    if (host_ifindex <= 0) throw std::runtime_error("no ifindex for " + host);
  }

  // Detaches the egress link explicitly (unmounting the bpffs would release it too).
  ~TrafficEnv() { (void)Dataplane::Uninstall(pin_dir); }
  TrafficEnv(const TrafficEnv&) = delete;
  TrafficEnv& operator=(const TrafficEnv&) = delete;

  Dataplane::Options DataplaneOptions() const {
    Dataplane::Options o;
    o.pin_dir = pin_dir;
    o.cgroup_path = root.Path();
    return o;
  }
};

// An IFB in the host namespace, deleted on scope exit (its qdiscs go with it).
struct IfbGuard {
  std::string name;
  ~IfbGuard() { ShOk("ip link del " + name); }
};

HtbInstaller MustInstaller() {
  auto inst = HtbInstaller::Create();
  INFO(inst.status().message());
  REQUIRE(inst.ok());
  return std::move(inst).value();
}

// The IFB's ifindex; the device is created if missing.
int MustEnsureIfb(HtbInstaller& inst, const std::string& name) {
  auto index = inst.EnsureIfb(name);
  INFO(index.status().message());
  REQUIRE(index.ok());
  return *index;
}

std::unique_ptr<Dataplane> MustOpen(const Dataplane::Options& options) {
  auto dp = Dataplane::Open(options);
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  return std::move(dp).value();
}

// The HTB classes of a link, read in-process over netlink, and when. The read takes well under a
// millisecond; its time is the middle of the request/answer bracket (the best of 5), off by at
// most half the bracket. WireRate execs tc, 20-150 ms on a loaded VM: over a 3 s window that is
// +-2 % (a 200 Mbit/s leaf read as 204.4 and a 50 as 51.0 in the same window), too coarse to hold a
// cap to 2 %.
struct ClassSample {
  TrafficClock::time_point t;
  TrafficClock::duration bracket{};
  netqos::shaping::HtbClassStatsMap classes;
};

ClassSample SampleClasses(netqos::shaping::HtbClassStatsReader& reader, int ifindex) {
  ClassSample best;
  for (int i = 0; i < 5; ++i) {
    const auto a = TrafficClock::now();
    auto read = reader.Read(ifindex);
    const auto b = TrafficClock::now();
    INFO(read.status().message());
    REQUIRE(read.ok());
    if (i == 0 || b - a < best.bracket) best = {a + (b - a) / 2, b - a, std::move(*read)};
    if (b - a < milliseconds(1)) break;
  }
  return best;
}

netqos_class Class(uint32_t priority, uint32_t net_class_id) {
  netqos_class c{};
  c.priority = priority;
  c.net_class_id = net_class_id;
  c.qos_level = NETQOS_QOS_SHARED;
  // Every leaf in these tests is capped both ways: received packets go to the IFB.
  if (priority != 0) c.flags = NETQOS_CLASS_F_INGRESS_SHAPED;
  return c;
}

void RequireOk(const netqos::Status& st) {
  INFO(st.message());
  REQUIRE(st.ok());
}

void SleepUntil(TrafficClock::time_point t) { std::this_thread::sleep_until(t); }

Iperf3Result MustFinish(Iperf3Client& client, const std::string& what) {
  Iperf3Result r = client.Wait();
  INFO(what << ": " << r.error << "\n" << r.output);
  REQUIRE(r.ok());
  return r;
}

// A container under test: its cgroup and cap, its iperf3 pair and its HTB leaf.
struct Container {
  std::unique_ptr<TestCgroup> cg;
  uint64_t mbps = 0;
  uint16_t port = 0;
  std::unique_ptr<Iperf3Server> server;
  std::unique_ptr<Iperf3Client> client;
  std::string leaf;  // HTB class handle text
};

}  // namespace

TEST_CASE("traffic: egress leaves of 50, 200 and 1000 Mbit/s hold their caps side by side",
          "[traffic]") {
  TrafficEnv env("e", 1);
  std::vector<Container> cs(3);
  const uint64_t caps[] = {50, 200, 1000};
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i].cg = std::make_unique<TestCgroup>(env.root, "c" + std::to_string(caps[i]));
    cs[i].mbps = caps[i];
    cs[i].port = static_cast<uint16_t>(15201 + i);
  }
  TestCgroup unallocated(env.root, "unallocated");

  std::unique_ptr<Dataplane> dp = MustOpen(env.DataplaneOptions());
  HtbPlanner planner(env.host);
  auto plan = planner.Plan(
      kLinkMbps, {{cs[0].cg->Id(), QosLevel::kShared, netqos::shaping::MbitToBits(cs[0].mbps)},
                  {cs[1].cg->Id(), QosLevel::kShared, netqos::shaping::MbitToBits(cs[1].mbps)},
                  {cs[2].cg->Id(), QosLevel::kDedicated, netqos::shaping::MbitToBits(cs[2].mbps)}});
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  HtbInstaller inst = MustInstaller();
  RequireOk(inst.Apply(env.host_ifindex, *plan).status());
  std::vector<uint32_t> handles(cs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    const uint32_t prio = planner.PriorityFor(cs[i].cg->Id());
    handles[i] = prio;
    cs[i].leaf = TcHandleText(prio);
    RequireOk(dp->SetClass(cs[i].cg->Id(), Class(prio, static_cast<uint32_t>(100 + i))));
  }

  for (auto& c : cs) c.server = std::make_unique<Iperf3Server>(env.ns, env.peer_ip, c.port);
  for (auto& c : cs) {
    c.client = std::make_unique<Iperf3Client>(Iperf3ClientOptions{.server_ip = env.peer_ip,
                                                                  .port = c.port,
                                                                  .seconds = kLongRunSeconds,
                                                                  .cgroup = c.cg->Path()});
  }
  SleepUntil(cs.back().client->started() + kWarmUp);
  WireRate rate;
  for (const auto& c : cs) rate.HtbClass(c.leaf, "", env.host, c.leaf);
  rate.Link("peer rx", env.ns, env.peer, LinkDirection::kRx);
  // No leaf may send above its cap + 2 % in any window. Each must also be seen sending at its cap
  // (-2 %), in at least one window: a leaf below it has a sender that did not keep it backlogged
  // (three senders, their receivers and the veth's softirq share two cores; a CI neighbour takes
  // one: 48.4 of 50 Mbit/s was seen), which is no enforcement error, so it is measured again.
  // The leaves' rates come from netlink samples around each window (SampleClasses), WireRate's
  // window inside them is for the peer's bytes against the leaves' below.
  auto stats = netqos::shaping::HtbClassStatsReader::Create();
  INFO(stats.status().message());
  REQUIRE(stats.ok());
  std::vector<bool> shown(cs.size(), false);
  int windows = 0;
  while (windows < kMaxWindows) {
    const ClassSample s0 = SampleClasses(*stats, env.host_ifindex);
    rate.Measure(kWindow);
    const ClassSample s1 = SampleClasses(*stats, env.host_ifindex);
    ++windows;
    const double seconds = std::chrono::duration<double>(s1.t - s0.t).count();
    const double timing = std::chrono::duration<double>(s0.bracket + s1.bracket).count() / 2;
    for (size_t i = 0; i < cs.size(); ++i) {
      const uint64_t bytes = s1.classes.at(handles[i]).bytes - s0.classes.at(handles[i]).bytes;
      const double mbps = static_cast<double>(bytes) * 8 / seconds / 1e6;
      const double cap = static_cast<double>(cs[i].mbps);
      std::printf(
          "traffic egress: window %d: leaf %s cap %4llu Mbit/s: wire %8.2f Mbit/s over "
          "%.3f s (%.4f of cap; timing +-%.3f %%)\n",
          windows, cs[i].leaf.c_str(), static_cast<unsigned long long>(cs[i].mbps), mbps, seconds,
          mbps / cap, 100 * timing / seconds);
      INFO("leaf " << cs[i].leaf << " cap " << cs[i].mbps << " window " << windows);
      CHECK(mbps <= cap * (1 + kCapTolerance));
      shown[i] = shown[i] || mbps >= cap * (1 - kCapTolerance);
    }
    if (std::find(shown.begin(), shown.end(), false) == shown.end()) break;
  }

  uint64_t leaf_bytes = 0, leaf_segments = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    Container& c = cs[i];
    const Iperf3Result r = MustFinish(*c.client, "client of leaf " + c.leaf);
    const auto d = rate.Get(c.leaf);  // the last window
    leaf_bytes += d.bytes;
    leaf_segments += d.packets;
    std::printf(
        "traffic egress: leaf %s cap %4llu Mbit/s: iperf3 sender %.1f receiver %.1f Mbit/s, %lld "
        "retransmits\n",
        c.leaf.c_str(), static_cast<unsigned long long>(c.mbps), r.SenderMbps(), r.ReceiverMbps(),
        static_cast<long long>(r.retransmits));
    INFO("leaf " << c.leaf << " cap " << c.mbps);
    CHECK(shown[i]);  // at its cap -2 % in one of `windows` windows
    // iperf3 sees payload over its whole run (start-up included): loosely below the cap.
    CHECK(r.ReceiverMbps() < static_cast<double>(c.mbps));
    // What it received is what its leaf sent over the run, less the segments' headers: the leaf
    // carried this flow and nothing else. (Not its average against the cap: over a run of up to
    // kMaxWindows windows a starved sender's idle seconds count there; the windows above judge the
    // cap.)
    const auto& total = SampleClasses(*stats, env.host_ifindex).classes.at(handles[i]);
    const double leaf_payload_run =
        static_cast<double>(total.bytes) - static_cast<double>(kSegmentHeaders * total.packets);
    std::printf("traffic egress: leaf %s: iperf3 received %llu payload bytes, the leaf sent %.0f\n",
                c.leaf.c_str(), static_cast<unsigned long long>(r.receiver_bytes),
                leaf_payload_run);
    CHECK(static_cast<double>(r.receiver_bytes) == Approx(leaf_payload_run).epsilon(0.01));
  }

  // The peer receives exactly what the leaves sent. veth counts a GSO packet's headers once, HTB
  // once per segment, so compare the payload both imply (bytes minus per-packet headers).
  const auto rx = rate.Get("peer rx");
  const double leaf_payload = static_cast<double>(leaf_bytes - kSegmentHeaders * leaf_segments);
  const double rx_payload = static_cast<double>(rx.bytes - kSegmentHeaders * rx.packets);
  double leaf_mbps = 0;
  for (const auto& c : cs) leaf_mbps += rate.Mbps(c.leaf);
  std::printf(
      "traffic egress: peer rx %.2f Mbit/s (%llu skbs) vs leaves %.2f Mbit/s (%llu segments); "
      "payload ratio rx/leaves %.4f, raw byte ratio %.4f\n",
      rx.Mbps(), static_cast<unsigned long long>(rx.packets), leaf_mbps,
      static_cast<unsigned long long>(leaf_segments), rx_payload / leaf_payload,
      static_cast<double>(rx.bytes) / static_cast<double>(leaf_bytes));
  CHECK(rx_payload == Approx(leaf_payload).epsilon(kCapTolerance));
  // Raw bytes: rx lies between payload and wire, as only the segment headers differ.
  CHECK(static_cast<double>(rx.bytes) <= static_cast<double>(leaf_bytes) * 1.005);
  CHECK(static_cast<double>(rx.bytes) >= static_cast<double>(leaf_bytes) * kPayloadPerWire * 0.98);

  // A container without a class-map entry lands in the default leaf (ceil = the 10 Gbit/s link),
  // far above every cap, and none of its bytes go through a container leaf.
  {
    Iperf3Client client(Iperf3ClientOptions{
        .server_ip = env.peer_ip, .port = cs[0].port, .seconds = 3, .cgroup = unallocated.Path()});
    SleepUntil(client.started() + milliseconds(1000));
    const std::string dflt = TcHandleText(MakeHandle(kQdiscMajor, plan->default_minor));
    WireRate w;
    w.HtbClass("default", "", env.host, dflt);
    for (const auto& c : cs) w.HtbClass(c.leaf, "", env.host, c.leaf);
    w.Measure(milliseconds(1500));
    const Iperf3Result r = MustFinish(client, "unallocated client");
    std::printf(
        "traffic egress: unallocated cgroup: default leaf %s %.0f Mbit/s, iperf3 sender %.0f "
        "Mbit/s\n",
        dflt.c_str(), w.Mbps("default"), r.SenderMbps());
    CHECK(w.Mbps("default") > 2.0 * 1000);
    CHECK(r.SenderMbps() > 2.0 * 1000 * kPayloadPerWire);
    for (const auto& c : cs) {
      INFO("leaf " << c.leaf);
      CHECK(w.Get(c.leaf).bytes < 100000);  // at most stragglers of the first runs
    }
  }
  RequireOk(inst.Remove(env.host_ifindex));
}

TEST_CASE("traffic: ingress through tc, socket lookup and an IFB holds 50, 200 and 1000 Mbit/s",
          "[traffic]") {
  TrafficEnv env("i", 2);
  std::vector<Container> cs(3);
  const uint64_t caps[] = {50, 200, 1000};
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i].cg = std::make_unique<TestCgroup>(env.root, "c" + std::to_string(caps[i]));
    cs[i].mbps = caps[i];
    cs[i].port = static_cast<uint16_t>(15211 + i);
  }
  std::unique_ptr<Dataplane> dp = MustOpen(env.DataplaneOptions());
  HtbInstaller inst = MustInstaller();
  IfbGuard ifb{UniquePrefix() + "ibi"};
  const int ifb_index = MustEnsureIfb(inst, ifb.name);

  HtbPlanner planner(ifb.name);
  auto plan = planner.Plan(
      kLinkMbps, {{cs[0].cg->Id(), QosLevel::kShared, netqos::shaping::MbitToBits(cs[0].mbps)},
                  {cs[1].cg->Id(), QosLevel::kShared, netqos::shaping::MbitToBits(cs[1].mbps)},
                  {cs[2].cg->Id(), QosLevel::kDedicated, netqos::shaping::MbitToBits(cs[2].mbps)}});
  REQUIRE(plan.ok());
  RequireOk(inst.Apply(ifb_index, *plan).status());
  for (size_t i = 0; i < cs.size(); ++i) {
    const uint32_t prio = planner.PriorityFor(cs[i].cg->Id());
    cs[i].leaf = TcHandleText(prio);
    RequireOk(dp->SetClass(cs[i].cg->Id(), Class(prio, static_cast<uint32_t>(200 + i))));
  }
  RequireOk(AttachIngress(
      {.pin_dir = env.pin_dir, .ifindex = env.host_ifindex, .ifb_ifindex = ifb_index}));
  auto attached = IngressAttached(env.host_ifindex);
  REQUIRE(attached.ok());
  REQUIRE(*attached);

  // The servers in the namespace send (-R) to clients whose sockets live in the host cgroups.
  for (auto& c : cs) c.server = std::make_unique<Iperf3Server>(env.ns, env.peer_ip, c.port);
  for (auto& c : cs) {
    c.client = std::make_unique<Iperf3Client>(Iperf3ClientOptions{.server_ip = env.peer_ip,
                                                                  .port = c.port,
                                                                  .seconds = kRunSeconds,
                                                                  .reverse = true,
                                                                  .cgroup = c.cg->Path()});
  }
  SleepUntil(cs.back().client->started() + kWarmUp);
  WireRate rate;
  for (const auto& c : cs) rate.HtbClass(c.leaf, "", ifb.name, c.leaf);
  rate.Measure(kWindow);

  for (auto& c : cs) {
    const Iperf3Result r = MustFinish(*c.client, "receiving client of leaf " + c.leaf);
    const auto d = rate.Get(c.leaf);
    std::printf(
        "traffic ingress: IFB leaf %s cap %4llu Mbit/s: wire %8.2f Mbit/s over %.3f s (%.4f of "
        "cap); iperf3 receiver %.1f Mbit/s (x1514/1448 = %.1f), %lld retransmits\n",
        c.leaf.c_str(), static_cast<unsigned long long>(c.mbps), d.Mbps(), d.seconds,
        d.Mbps() / static_cast<double>(c.mbps), r.ReceiverMbps(),
        r.ReceiverMbps() / kPayloadPerWire, static_cast<long long>(r.retransmits));
    INFO("IFB leaf " << c.leaf << " cap " << c.mbps);
    CHECK(d.Mbps() == Approx(static_cast<double>(c.mbps)).epsilon(kCapTolerance));
    // iperf3's payload rate over the whole run, scaled to wire bytes: loosely the cap.
    CHECK(r.ReceiverMbps() / kPayloadPerWire == Approx(static_cast<double>(c.mbps)).epsilon(0.05));
  }

  RequireOk(DetachIngress(env.host_ifindex));
  attached = IngressAttached(env.host_ifindex);
  REQUIRE(attached.ok());
  CHECK_FALSE(*attached);
  RequireOk(inst.Remove(ifb_index));
  RequireOk(inst.DeleteIfb(ifb.name));
}

// A UDP sink that never sends: it binds, counts what it receives for `seconds` and prints it.
constexpr const char* kUdpSink =
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.bind((sys.argv[1], int(sys.argv[2])))\n"
    "s.settimeout(0.2)\n"
    "end, n = time.time() + float(sys.argv[3]), 0\n"
    "while time.time() < end:\n"
    "    try:\n"
    "        n += len(s.recv(65536))\n"
    "    except socket.timeout:\n"
    "        pass\n"
    "print(n)\n";
// Sends 1400-byte datagrams to argv[1]:argv[2] at argv[4] Mbit/s (payload; bursts every 10 ms)
// for argv[3] seconds.
constexpr const char* kUdpBlaster =
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "d, b = (sys.argv[1], int(sys.argv[2])), bytes(1400)\n"
    "burst = int(float(sys.argv[4]) * 1e6 / 8 / 1400 / 100)\n"
    "t = time.time()\n"
    "end = t + float(sys.argv[3])\n"
    "while t < end:\n"
    "    for _ in range(burst):\n"
    "        try:\n"
    "            s.sendto(b, d)\n"
    "        except OSError:\n"
    "            pass\n"
    "    t += 0.01\n"
    "    time.sleep(max(0.0, t - time.time()))\n";

TEST_CASE("traffic: a UDP socket that only receives is held to its ingress cap", "[traffic]") {
  TrafficEnv env("u", 5);
  TestCgroup sink_cg(env.root, "sink");
  constexpr uint64_t kCapMbps = 40;
  constexpr int kSeconds = 5;
  constexpr uint16_t kPort = 15231;
  std::unique_ptr<Dataplane> dp = MustOpen(env.DataplaneOptions());
  HtbInstaller inst = MustInstaller();
  IfbGuard ifb{UniquePrefix() + "ibu"};
  const int ifb_index = MustEnsureIfb(inst, ifb.name);
  HtbPlanner planner(ifb.name);
  auto plan = planner.Plan(
      kLinkMbps, {{sink_cg.Id(), QosLevel::kShared, netqos::shaping::MbitToBits(kCapMbps)}});
  REQUIRE(plan.ok());
  RequireOk(inst.Apply(ifb_index, *plan).status());
  const uint32_t prio = planner.PriorityFor(sink_cg.Id());
  const std::string leaf = TcHandleText(prio);
  RequireOk(dp->SetClass(sink_cg.Id(), Class(prio, 400)));
  RequireOk(AttachIngress(
      {.pin_dir = env.pin_dir, .ifindex = env.host_ifindex, .ifb_ifindex = ifb_index}));

  // The sink's socket never sends, so only what it receives can tag it (netqos_rx); from then on
  // the tc program finds it and sends its packets through its IFB leaf.
  const std::string python = netqos::testing::FindProgram("python3");
  OutputCapture sink_out;
  const pid_t sink = SpawnIn(
      {python, "-c", kUdpSink, env.host_ip, std::to_string(kPort), std::to_string(kSeconds)},
      {.cgroup = sink_cg.Path(), .stdout_fd = sink_out.fd()});
  std::this_thread::sleep_for(milliseconds(300));  // bound before the first datagram
  const pid_t blaster = SpawnIn({python, "-c", kUdpBlaster, env.host_ip, std::to_string(kPort),
                                 std::to_string(kSeconds - 1), std::to_string(4 * kCapMbps)},
                                {.netns = env.ns});
  std::this_thread::sleep_for(milliseconds(1000));
  WireRate rate;
  rate.HtbClass("leaf", "", ifb.name, leaf).Link("sent", env.ns, env.peer, LinkDirection::kTx);
  rate.Measure(milliseconds(2000));
  int status = 0;
  REQUIRE(::waitpid(blaster, &status, 0) == blaster);
  REQUIRE(::waitpid(sink, &status, 0) == sink);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const double received_mbps = std::stod(sink_out.Read()) * 8 / 1e6 / kSeconds;
  const double sent_mbps = rate.Get("sent").Mbps();
  const double leaf_mbps = rate.Get("leaf").Mbps();
  std::printf(
      "traffic udp sink: sender %.1f Mbit/s on the wire, IFB leaf %s %.2f Mbit/s (cap %llu), "
      "sink payload %.1f Mbit/s over its %d s\n",
      sent_mbps, leaf.c_str(), leaf_mbps, static_cast<unsigned long long>(kCapMbps), received_mbps,
      kSeconds);
  REQUIRE(sent_mbps > 2.0 * static_cast<double>(kCapMbps));  // the cap had something to hold
  // Through the leaf, never above the cap; below it by what the leaf's short queue drops of each
  // 10 ms burst (TCP keeps a leaf full, bursty UDP does not). Unshaped, the sink would get 4x.
  CHECK(leaf_mbps <= static_cast<double>(kCapMbps) * (1 + kCapTolerance));
  CHECK(leaf_mbps >= static_cast<double>(kCapMbps) * 0.85);
  CHECK(received_mbps < 1.05 * static_cast<double>(kCapMbps));
  auto ctr = dp->ContainerCounters(sink_cg.Id());
  REQUIRE(ctr.ok());
  CHECK(ctr->rx_packets > 0);
  CHECK(ctr->tx_packets == 0);
  RequireOk(DetachIngress(env.host_ifindex));
  RequireOk(inst.Remove(ifb_index));
}

TEST_CASE("traffic: container counters agree with the bytes iperf3 sent and received",
          "[traffic]") {
  TrafficEnv env("c", 3);
  TestCgroup cg(env.root, "counted");
  std::unique_ptr<Dataplane> dp = MustOpen(env.DataplaneOptions());
  // Classify and count only: priority 0 leaves skb->priority alone, ifb 0 means no redirect.
  constexpr uint32_t kNetClass = 300;
  // No tc program: received packets are counted by netqos_rx at the socket.
  RequireOk(dp->SetClass(cg.Id(), Class(0, kNetClass)));
  Iperf3Server server(env.ns, env.peer_ip, 15221);

  // Counted bytes against iperf3's payload bytes. Lower bound: every byte the receiving side
  // read crossed the hook at least once, headers on top: counted >= received. Upper bound: no more
  // than the sending side wrote, plus the headers the hook sees per skb; at worst every skb is a
  // single 1448-byte segment: IPv4 20 + TCP 32, both hooks seeing L3. With GSO and GRO the real
  // overhead is far lower (about 0.1 to 1 %).
  constexpr double kTxHeaders = (1448.0 + 52.0) / 1448.0;  // 1.0359
  constexpr double kRxHeaders = kTxHeaders;
  auto check = [](const char* dir, uint64_t counted, uint64_t segments, const Iperf3Result& r,
                  double headers) {
    const double c = static_cast<double>(counted);
    std::printf(
        "traffic counters: %s %llu bytes (%llu segments); iperf3 payload sent %llu, received "
        "%llu (%.0f Mbit/s); counted/received %.4f, counted/sent %.4f (bounds >= 1 of received, "
        "<= %.4f of sent)\n",
        dir, static_cast<unsigned long long>(counted), static_cast<unsigned long long>(segments),
        static_cast<unsigned long long>(r.sender_bytes),
        static_cast<unsigned long long>(r.receiver_bytes), r.ReceiverMbps(),
        c / static_cast<double>(r.receiver_bytes), c / static_cast<double>(r.sender_bytes),
        headers);
    INFO(dir);
    CHECK(c >= static_cast<double>(r.receiver_bytes));
    CHECK(c <= static_cast<double>(r.sender_bytes) * headers);
  };

  auto run = [&](bool reverse) {
    auto before = dp->ContainerCounters(cg.Id());
    REQUIRE(before.ok());
    Iperf3Client client(Iperf3ClientOptions{.server_ip = env.peer_ip,
                                            .port = server.port(),
                                            .seconds = 2,
                                            .reverse = reverse,
                                            .cgroup = cg.Path()});
    const Iperf3Result r = MustFinish(client, reverse ? "receiving client" : "sending client");
    std::this_thread::sleep_for(milliseconds(200));  // trailing ACKs and FINs
    auto after = dp->ContainerCounters(cg.Id());
    REQUIRE(after.ok());
    return std::make_tuple(r, *before, *after);
  };

  {
    const auto [r, before, after] = run(false);  // the container sends
    check("tx", after.tx_bytes - before.tx_bytes, after.tx_packets - before.tx_packets, r,
          kTxHeaders);
  }
  {
    const auto [r, before, after] = run(true);  // the container receives
    check("rx", after.rx_bytes - before.rx_bytes, after.rx_packets - before.rx_packets, r,
          kRxHeaders);
  }
  // The class counters saw the same packets (one container in the class).
  auto cls = dp->ClassCounters(kNetClass);
  auto ctr = dp->ContainerCounters(cg.Id());
  REQUIRE(cls.ok());
  REQUIRE(ctr.ok());
  CHECK(cls->tx_bytes == ctr->tx_bytes);
  CHECK(cls->rx_bytes == ctr->rx_bytes);
}

TEST_CASE("traffic: caps hold after the loading process has exited", "[traffic]") {
  TrafficEnv env("r", 4);
  TestCgroup sender(env.root, "sender");
  TestCgroup receiver(env.root, "receiver");
  HtbInstaller inst = MustInstaller();
  IfbGuard ifb{UniquePrefix() + "ibr"};
  const int ifb_index = MustEnsureIfb(inst, ifb.name);

  // One planner for both devices, so each container has the same leaf (and skb->priority) on
  // the veth (its egress) and on the IFB (its ingress): its ACKs land in its own leaves.
  constexpr uint64_t kCap = 200;
  HtbPlanner planner(env.host);
  auto plan = planner.Plan(kLinkMbps,
                           {{sender.Id(), QosLevel::kShared, netqos::shaping::MbitToBits(kCap)},
                            {receiver.Id(), QosLevel::kShared, netqos::shaping::MbitToBits(kCap)}});
  REQUIRE(plan.ok());
  RequireOk(inst.Apply(env.host_ifindex, *plan).status());
  RequireOk(inst.Apply(ifb_index, *plan).status());
  const uint32_t sender_prio = planner.PriorityFor(sender.Id());
  const uint32_t receiver_prio = planner.PriorityFor(receiver.Id());

  // The loader: a process that opens the dataplane, writes the class map, attaches ingress and
  // exits, closing every fd it had. What remains is pinned (maps, egress link) or held by tc.
  const pid_t loader = ::fork();
  REQUIRE(loader >= 0);
  if (loader == 0) {
    auto dp = Dataplane::Open(env.DataplaneOptions());
    if (!dp.ok()) ::_exit(2);
    if (!(*dp)->SetClass(sender.Id(), Class(sender_prio, 401)).ok()) ::_exit(3);
    if (!(*dp)->SetClass(receiver.Id(), Class(receiver_prio, 402)).ok()) ::_exit(4);
    if (!AttachIngress(
             {.pin_dir = env.pin_dir, .ifindex = env.host_ifindex, .ifb_ifindex = ifb_index})
             .ok()) {
      ::_exit(5);
    }
    dp->reset();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(loader, &status, 0) == loader);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto attached = IngressAttached(env.host_ifindex);
  REQUIRE(attached.ok());
  REQUIRE(*attached);

  Iperf3Server tx_server(env.ns, env.peer_ip, 15231);
  Iperf3Server rx_server(env.ns, env.peer_ip, 15232);
  Iperf3Client tx(Iperf3ClientOptions{.server_ip = env.peer_ip,
                                      .port = tx_server.port(),
                                      .seconds = kRunSeconds,
                                      .cgroup = sender.Path()});
  Iperf3Client rx(Iperf3ClientOptions{.server_ip = env.peer_ip,
                                      .port = rx_server.port(),
                                      .seconds = kRunSeconds,
                                      .reverse = true,
                                      .cgroup = receiver.Path()});
  SleepUntil(rx.started() + kWarmUp);
  WireRate rate;
  rate.HtbClass("egress", "", env.host, TcHandleText(sender_prio));
  rate.HtbClass("ingress", "", ifb.name, TcHandleText(receiver_prio));
  rate.Measure(kWindow);
  const Iperf3Result tx_result = MustFinish(tx, "sending client");
  const Iperf3Result rx_result = MustFinish(rx, "receiving client");
  std::printf(
      "traffic after loader exit: egress leaf %s %.2f Mbit/s, ingress IFB leaf %s %.2f Mbit/s "
      "(cap %llu); iperf3 sent %.1f, received %.1f Mbit/s\n",
      TcHandleText(sender_prio).c_str(), rate.Mbps("egress"), TcHandleText(receiver_prio).c_str(),
      rate.Mbps("ingress"), static_cast<unsigned long long>(kCap), tx_result.SenderMbps(),
      rx_result.ReceiverMbps());
  // What this test proves is that classification and shaping outlive the loader: each flow is
  // in its own leaf (an unclassified one would sit in the default leaf, at link rate) and no
  // leaf exceeds its cap. Two flows in opposite directions on two cores leave the senders
  // CPU-bound on a busy CI machine (one run measured 195.0 of 200), so the lower bound here is
  // looser; the 2 % accuracy tests above run one direction at a time.
  constexpr double kBusyFloor = 0.9;
  for (const char* dir : {"egress", "ingress"}) {
    INFO(dir);
    CHECK(rate.Mbps(dir) <= static_cast<double>(kCap) * (1 + kCapTolerance));
    CHECK(rate.Mbps(dir) >= static_cast<double>(kCap) * kBusyFloor);
  }

  RequireOk(DetachIngress(env.host_ifindex));
  RequireOk(inst.DeleteIfb(ifb.name));
}
