// netqosctl's enforcement views without a daemon or BPF: the class join, top's rates, the status
// and cgroup renderings, and the advice its errors give.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ctl/cgroup_explain.h"
#include "ctl/class_rows.h"
#include "ctl/status_view.h"
#include "ctl/top_view.h"

namespace netqos::ctl {
namespace {

namespace admin = ::netqos::admin::v1;

netqos_class Entry(uint32_t priority, uint32_t class_id, uint8_t level = NETQOS_QOS_SHARED) {
  netqos_class c{};
  c.priority = priority;
  c.net_class_id = class_id;
  c.qos_level = level;
  return c;
}

admin::ContainerClass DaemonEntry(uint64_t id, const std::string& pod, const std::string& container,
                                  uint32_t priority, bool capped, uint32_t mbps) {
  admin::ContainerClass c;
  c.set_cgroup_id(id);
  c.set_pod_uid("uid-" + pod);
  c.set_pod_namespace("ns");
  c.set_pod_name(pod);
  c.set_container(container);
  c.set_qos_level("shared_cores");
  c.set_net_class_id(7);
  c.set_priority(priority);
  c.set_htb_class(HtbClassText(priority));
  c.set_capped(capped);
  c.set_nic(capped ? "eth0" : "");
  c.set_allocated_mbps(mbps);
  if (capped) {
    for (auto* cap : {c.mutable_egress_cap(), c.mutable_ingress_cap()}) {
      cap->set_rate_bps(uint64_t{mbps} * 1000 * 1000);
      cap->set_ceil_bps(uint64_t{mbps} * 1000 * 1000);
      cap->set_source("allocation");
    }
  }
  c.mutable_counters()->set_tx_bytes(11);
  return c;
}

TrafficCounters Tx(uint64_t bytes, uint64_t packets, uint64_t drops = 0) {
  TrafficCounters c;
  c.tx_bytes = bytes;
  c.tx_packets = packets;
  c.drops = drops;
  return c;
}

}  // namespace

TEST_CASE("ctl text helpers: handles, QoS levels, SI rates", "[ctl]") {
  CHECK(HtbClassText(0x100100) == "10:100");
  CHECK(HtbClassText(0x100031) == "10:31");
  CHECK(HtbClassText(0) == "-");
  CHECK(QosLevelText(NETQOS_QOS_SYSTEM) == "system_cores");
  CHECK(QosLevelText(NETQOS_QOS_DEDICATED) == "dedicated_cores");
  CHECK(QosLevelText(NETQOS_QOS_SHARED) == "shared_cores");
  CHECK(QosLevelText(NETQOS_QOS_RECLAIMED) == "reclaimed_cores");
  CHECK(QosLevelText(NETQOS_QOS_UNKNOWN) == "unknown");
  CHECK(HumanRate(0) == "0.0");
  CHECK(HumanRate(999) == "999.0");
  CHECK(HumanRate(100e6) == "100.0M");
  CHECK(HumanRate(1.25e9) == "1.2G");
  CHECK(HumanCount(12) == "12");
  CHECK(HumanCount(1536) == "1.5k");
  CHECK(DurationText(5) == "5s");
  CHECK(DurationText(125) == "2m05s");
  CHECK(DurationText(3 * 3600 + 60) == "3h01m");
  CHECK(DurationText(2 * 86400 + 5 * 3600) == "2d5h");
}

TEST_CASE("pin errors say what to do", "[ctl]") {
  CHECK(DescribePinError(NotFound("pin dir /x not found"), "/x") ==
        "pin dir /x not found: is enforcement on (--enforcement=bpf) and is --bpf-pin-dir right?");
  const std::string missing_map =
      DescribePinError(NotFound("bpf_obj_get(/x/netqos_cls_v1): No such file"), "/x");
  CHECK_THAT(missing_map, Catch::Contains("restart netqosd with --enforcement=bpf"));
  const std::string denied =
      DescribePinError(Status(StatusCode::kPermissionDenied,
                              "bpf_obj_get(/x/m): permission denied (...): run as "
                              "root (reading pinned BPF maps needs CAP_BPF)"),
                       "/x");
  CHECK_THAT(denied, Catch::Contains("root"));
  CHECK_THAT(DescribePinError(FailedPrecondition("layout"), "/x"),
             Catch::StartsWith("cannot read the pinned maps in /x: layout"));
}

TEST_CASE("classes: pinned entries joined with the daemon's names", "[ctl]") {
  PinnedSnapshot pinned;
  pinned.classes = {{10, Entry(0x100100, 7)}, {30, Entry(0x100031, 7)}};
  pinned.container_counters = {{10, Tx(5000, 5)}, {30, Tx(10, 1)}, {99, Tx(1, 1)}};
  pinned.class_counters = {{7, Tx(5010, 6)}};
  admin::ListClassesResponse daemon;
  daemon.set_mode("bpf");
  *daemon.add_containers() = DaemonEntry(10, "web", "app", 0x100100, true, 100);
  *daemon.add_containers() = DaemonEntry(20, "db", "pg", 0x100101, true, 50);  // not in the map

  SECTION("both sides") {
    const ClassRows rows = JoinClasses(&pinned, &daemon);
    REQUIRE(rows.containers.size() == 3);  // 99 has counters only: not a class entry
    CHECK(rows.containers[0].Name() == "ns/db/pg");
    CHECK_FALSE(rows.containers[0].pinned.has_value());
    CHECK(rows.containers[1].Name() == "ns/web/app");
    REQUIRE(rows.containers[1].counters.has_value());
    CHECK(rows.containers[1].counters->tx_bytes == 5000);  // the kernel's counters win
    CHECK(rows.containers[2].cgroup_id == 30);
    CHECK(rows.containers[2].Name().empty());
    CHECK(rows.containers[2].qos_level() == "shared_cores");
    REQUIRE(rows.classes.size() == 1);
    CHECK(rows.classes[0].second.tx_bytes == 5010);

    ClassSources src{"/pins", true, true, "bpf", ""};
    const auto j = ClassesJson(rows, src);
    CHECK(j["daemon_reachable"] == true);
    CHECK(j["containers"][1]["pod_name"] == "web");
    CHECK(j["containers"][1]["htb_class"] == "10:100");
    CHECK(j["containers"][1]["in_pinned_map"] == true);
    CHECK(j["containers"][1]["known_to_daemon"] == true);
    CHECK(j["containers"][1]["counters"]["tx_bytes"] == 5000);
    CHECK(j["containers"][2]["known_to_daemon"] == false);
    CHECK(j["containers"][2]["pod_name"].is_null());  // only the daemon knows it

    std::ostringstream table;
    PrintClasses(rows, src, table);
    CHECK_THAT(table.str(), Catch::StartsWith("CGROUP "));
    CHECK_THAT(table.str(), Catch::Contains("ns/web/app"));
    CHECK_THAT(table.str(), Catch::Contains("missing in map"));
    CHECK_THAT(table.str(), Catch::Contains("not wanted by daemon"));
    CHECK_THAT(table.str(), Catch::Contains("100M/100M"));
  }

  SECTION("daemon down: ids and counters only, with a note") {
    const ClassRows rows = JoinClasses(&pinned, nullptr);
    REQUIRE(rows.containers.size() == 2);
    CHECK(rows.containers[0].cgroup_id == 10);
    CHECK(rows.containers[0].priority() == 0x100100);
    ClassSources src{"/pins", true, false, "", "pod and container names need the daemon: x"};
    std::ostringstream table;
    PrintClasses(rows, src, table);
    CHECK_THAT(table.str(), Catch::StartsWith("note: pod and container names need the daemon"));
    CHECK_THAT(table.str(), Catch::Contains("(names need the daemon)"));
  }

  SECTION("pins unreadable: the daemon's rows with its counters") {
    const ClassRows rows = JoinClasses(nullptr, &daemon);
    REQUIRE(rows.containers.size() == 2);
    REQUIRE(rows.containers[1].counters.has_value());
    CHECK(rows.containers[1].counters->tx_bytes == 11);
  }

  SECTION("enforcement off") {
    admin::ListClassesResponse none;
    none.set_mode("none");
    std::ostringstream table;
    PrintClasses(JoinClasses(nullptr, &none), {"/pins", false, true, "none", ""}, table);
    CHECK(table.str() == "no class entries: enforcement is off in netqosd (mode none)\n");
  }
}

TEST_CASE("top: rates from counter deltas", "[ctl]") {
  const Rates r = RateBetween(Tx(1000, 10, 1), Tx(13500000, 1010, 3), 1.0);
  CHECK(r.tx_bits == Approx((13500000.0 - 1000) * 8));
  CHECK(r.tx_packets == Approx(1000));
  CHECK(r.drops == Approx(2));
  CHECK(r.rx_bits == 0);
  // A counter that went backwards was re-created: it counts from zero.
  CHECK(RateBetween(Tx(1000, 10), Tx(400, 4), 2.0).tx_bits == Approx(1600));
  CHECK(RateBetween(Tx(0, 0), Tx(400, 4), 0).tx_bits == 0);

  CounterSample before{10.0, {{1, Tx(0, 0)}, {2, Tx(100, 1)}}, {{7, Tx(100, 1)}}};
  CounterSample after{
      10.5, {{1, Tx(1000, 2)}, {2, Tx(62600, 51)}, {3, Tx(50, 1)}}, {{7, Tx(63700, 54)}}};
  ClassRow named;
  named.cgroup_id = 2;
  named.pinned = Entry(0x100100, 7);
  named.daemon = DaemonEntry(2, "web", "app", 0x100100, true, 100);
  ClassRow idle;
  idle.cgroup_id = 4;
  idle.pinned = Entry(0x100031, 7);
  TopFrame f = BuildTopFrame(before, after, {named, idle});
  CHECK(f.interval_seconds == Approx(0.5));
  REQUIRE(f.containers.size() == 4);
  CHECK(f.containers[0].cgroup_id == 2);  // busiest first
  CHECK(f.containers[0].rates.tx_bits == Approx(62500 * 8 / 0.5));
  CHECK(f.containers[1].cgroup_id == 1);
  CHECK(f.containers[2].cgroup_id == 3);  // new during the interval: counted from zero
  CHECK(f.containers[2].rates.tx_packets == Approx(2));
  CHECK(f.containers[3].cgroup_id == 4);  // idle class entry, no counters yet
  CHECK(f.containers[3].rates.tx_bits == 0);
  REQUIRE(f.classes.size() == 1);
  CHECK(f.classes[0].rates.tx_bits == Approx(63600 * 8 / 0.5));

  f.pin_dir = "/pins";
  f.source = "pinned maps";
  f.names_from_daemon = true;
  const auto j = TopFrameJson(f);
  CHECK(j["containers"][0]["pod_name"] == "web");
  CHECK(j["containers"][0]["tx_bits_per_second"].get<double>() == Approx(1e6));
  CHECK(j["containers"][0]["totals"]["tx_bytes"] == 62600);
  CHECK(j["containers"][1]["known_to_daemon"] == false);
  CHECK(j["classes"][0]["net_class_id"] == 7);
  CHECK(j.dump().find('\n') == std::string::npos);  // one line per refresh

  std::ostringstream table;
  PrintTopFrame(f, table);
  CHECK_THAT(table.str(), Catch::StartsWith("netqosctl top: rates over 0.5 s from pinned maps"));
  CHECK_THAT(table.str(), Catch::Contains("ns/web/app"));
  CHECK_THAT(table.str(), Catch::Contains("1.0M"));
  CHECK_THAT(table.str(), Catch::Contains("CLASSID"));
}

TEST_CASE("drops: the daemon's HTB leaf counters in classes and top", "[ctl]") {
  auto leaf = [](admin::LeafQueue* q, const char* device, uint64_t drops) {
    q->set_device(device);
    q->set_htb_class("10:100");
    q->mutable_counters()->set_drops(drops);
    q->mutable_counters()->set_overlimits(drops * 10);
  };
  auto daemon_with = [&](uint64_t egress_drops, bool queues) {
    admin::ListClassesResponse d;
    d.set_mode("bpf");
    d.set_queue_counters(queues);
    auto* web = d.add_containers();
    *web = DaemonEntry(10, "web", "app", 0x100100, true, 100);
    if (queues) {
      leaf(web->mutable_egress_queue(), "eth0", egress_drops);
      leaf(web->mutable_ingress_queue(), "nqifb2", 2);
    }
    *d.add_containers() = DaemonEntry(30, "web", "sidecar", 0x100031, false, 0);
    auto* cls = d.add_classes();
    cls->set_net_class_id(7);
    if (queues) {
      cls->mutable_egress_queue()->set_drops(egress_drops);
      cls->mutable_ingress_queue()->set_drops(2);
    }
    return d;
  };

  SECTION("classes: per direction; a container without a leaf of its own has none") {
    const admin::ListClassesResponse daemon = daemon_with(10, true);
    const ClassRows rows = JoinClasses(nullptr, &daemon);
    REQUIRE(rows.containers.size() == 2);
    CHECK(rows.containers[0].Name() == "ns/web/app");
    CHECK(rows.containers[0].Drops().egress == std::optional<uint64_t>(10));
    CHECK(rows.containers[0].Drops().ingress == std::optional<uint64_t>(2));
    CHECK(rows.containers[0].Drops().Total() == std::optional<uint64_t>(12));
    CHECK(rows.containers[1].Drops().egress == std::optional<uint64_t>(0));
    CHECK(ClassDrops(rows, 7).egress == std::optional<uint64_t>(10));
    std::ostringstream table;
    PrintClasses(rows, {"/pins", false, true, "bpf", ""}, table);
    CHECK_THAT(table.str(), Catch::Contains("DROPS TX/RX"));
    CHECK_THAT(table.str(), Catch::Contains("10/2"));
    CHECK_THAT(table.str(), Catch::Contains("0/0"));
    const auto j = ClassesJson(rows, {"/pins", false, true, "bpf", ""});
    CHECK(j["queues_read"] == true);
    CHECK(j["containers"][0]["drops"]["egress"] == 10);
    CHECK(j["containers"][0]["queues"]["egress"]["overlimits"] == 100);
    CHECK(j["containers"][0]["queues"]["ingress"]["device"] == "nqifb2");
    CHECK(j["containers"][1]["drops"]["ingress"] == 0);
    CHECK(j["containers"][1]["queues"]["egress"].is_null());
    CHECK(j["classes"][0]["drops"]["ingress"] == 2);
  }

  SECTION("an unreadable leaf, a daemon that does not read queues, no daemon: unknown") {
    admin::ListClassesResponse daemon = daemon_with(10, true);
    daemon.mutable_containers(0)->mutable_egress_queue()->set_error("rtnl: boom");
    ClassRows rows = JoinClasses(nullptr, &daemon);
    CHECK_FALSE(rows.containers[0].Drops().egress.has_value());
    CHECK(rows.containers[0].Drops().ingress == std::optional<uint64_t>(2));
    CHECK(ClassRowJson(rows.containers[0])["queues"]["egress"]["error"] == "rtnl: boom");

    const admin::ListClassesResponse old = daemon_with(10, false);
    rows = JoinClasses(nullptr, &old);
    CHECK_FALSE(rows.containers[0].Drops().Total().has_value());
    CHECK_FALSE(ClassDrops(rows, 7).egress.has_value());
    std::ostringstream table;
    PrintClasses(rows, {"/pins", false, true, "bpf", ""}, table);
    CHECK_THAT(table.str(), Catch::Contains("-/-"));

    PinnedSnapshot pinned;
    pinned.classes = {{10, Entry(0x100100, 7)}};
    rows = JoinClasses(&pinned, nullptr);
    CHECK_FALSE(rows.containers[0].Drops().egress.has_value());
    CHECK(ClassRowJson(rows.containers[0])["drops"]["egress"].is_null());
  }

  SECTION("top: drop rates between two readings of the daemon's leaves") {
    CounterSample before{10.0, {{10, Tx(0, 0)}}, {{7, Tx(0, 0)}}};
    CounterSample after{10.5, {{10, Tx(1000, 10)}}, {{7, Tx(1000, 10)}}};
    const admin::ListClassesResponse d1 = daemon_with(10, true);
    const admin::ListClassesResponse d2 = daemon_with(60, true);
    AddLeafDrops(JoinClasses(nullptr, &d1), &before);
    const ClassRows rows = JoinClasses(nullptr, &d2);
    AddLeafDrops(rows, &after);
    const TopFrame f = BuildTopFrame(before, after, rows.containers);
    const TopFrame::Container* web = nullptr;
    const TopFrame::Container* side = nullptr;
    for (const auto& c : f.containers) (c.cgroup_id == 10 ? web : side) = &c;
    REQUIRE(web != nullptr);
    REQUIRE(side != nullptr);
    CHECK(web->rates.egress_drops == std::optional<double>(100.0));
    CHECK(web->rates.ingress_drops == std::optional<double>(0.0));
    CHECK(web->rates.drops == Approx(100));
    CHECK(web->drops.egress == std::optional<uint64_t>(60));
    CHECK(web->totals.drops == 62);
    CHECK(side->rates.egress_drops == std::optional<double>(0.0));
    REQUIRE(f.classes.size() == 1);
    CHECK(f.classes[0].rates.egress_drops == std::optional<double>(100.0));
    CHECK(f.classes[0].drops.ingress == std::optional<uint64_t>(2));

    const auto j = TopFrameJson(f);
    for (const auto& c : j["containers"]) {
      if (c["cgroup_id"] != 10) continue;
      CHECK(c["drops"]["egress"] == 60);
      CHECK(c["egress_drops_per_second"] == 100.0);
      CHECK(c["queues"]["egress"]["device"] == "eth0");
      CHECK(c["totals"]["drops"] == 62);
    }
    std::ostringstream table;
    PrintTopFrame(f, table);
    CHECK_THAT(table.str(), Catch::Contains("DROP/s TX/RX"));
    CHECK_THAT(table.str(), Catch::Contains("100.0/0.0"));
    CHECK_THAT(table.str(), Catch::Contains("60/2"));

    // The first reading had no daemon: totals are known, rates are not.
    CounterSample blind{10.0, {{10, Tx(0, 0)}}, {{7, Tx(0, 0)}}};
    const TopFrame g = BuildTopFrame(blind, after, rows.containers);
    for (const auto& c : g.containers) {
      if (c.cgroup_id != 10) continue;
      CHECK_FALSE(c.rates.egress_drops.has_value());
      CHECK(c.drops.egress == std::optional<uint64_t>(60));
    }
    CHECK(TopFrameJson(g)["containers"][0]["egress_drops_per_second"].is_null());
  }
}

TEST_CASE("cgroup: container cgroup names of both drivers", "[ctl]") {
  CHECK(
      LooksLikeContainerCgroup("/sys/fs/cgroup/kubepods/burstable/"
                               "pod0a1b2c3d-0000-4000-8000-000000000001/0123456789abcdef"));
  CHECK(LooksLikeContainerCgroup(
      "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000001.slice/"
      "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"));
  CHECK(LooksLikeContainerCgroup("/x/kubepods-pod0a1b2c3d_0000.slice/crio-0123456789ab.scope"));
  CHECK_FALSE(LooksLikeContainerCgroup("/sys/fs/cgroup/system.slice/sshd.service"));
  CHECK_FALSE(LooksLikeContainerCgroup("/sys/fs/cgroup/kubepods/burstable/pod0a1b2c3d-0000"));
  CHECK_FALSE(LooksLikeContainerCgroup("/sys/fs/cgroup/user.slice/0123456789abcdef"));
}

TEST_CASE("cgroup: what applies and why", "[ctl]") {
  const std::string container =
      "/sys/fs/cgroup/kubepods/pod0a1b2c3d-0000-4000-8000-000000000001/0123456789abcdef";
  CgroupFacts f;
  f.path = container;
  f.cgroup_id = 77;
  f.pin_dir = "/pins";
  f.pinned_read = true;
  f.daemon_reached = true;
  f.mode = "bpf";
  auto joined = [](const Explanation& e) {
    std::string all;
    for (const auto& r : e.reasons) all += r + "\n";
    return all;
  };

  SECTION("capped container") {
    f.entry = Entry(0x100100, 7);
    f.entry->flags = NETQOS_CLASS_F_INGRESS_SHAPED;
    f.daemon = DaemonEntry(77, "web", "app", 0x100100, true, 100);
    const Explanation e = Explain(f);
    CHECK_THAT(joined(e), Catch::Contains("received packets are redirected to the NIC's IFB"));
    CHECK(e.classified);
    CHECK_THAT(joined(e), Catch::Contains("shared_cores, net class id 7"));
    CHECK_THAT(joined(e), Catch::Contains("pod ns/web (uid uid-web), container app"));
    CHECK_THAT(joined(e),
               Catch::Contains("capped by its HTB leaf 10:100 on eth0, sent/received 100M/100M "
                               "bit/s, from its allocation"));
    const auto j = CgroupJson(f, e);
    CHECK(j["classified"] == true);
    CHECK(j["class_entry"]["htb_class"] == "10:100");
    CHECK(j["daemon"]["container"]["pod_name"] == "web");
    CHECK(j["looks_like_container"] == true);
    std::ostringstream text;
    PrintCgroup(f, e, text);
    CHECK_THAT(text.str(), Catch::Contains("classified: "));
    CHECK_THAT(text.str(), Catch::Contains("100 Mbps on eth0"));
  }

  SECTION("container of a pod classified at its veth") {
    f.entry = Entry(0x100100, 7);
    f.entry->flags = NETQOS_CLASS_F_INGRESS_SHAPED | NETQOS_CLASS_F_VETH;
    f.entry->slot = 12;
    f.daemon = DaemonEntry(77, "web", "app", 0x100100, true, 100);
    const std::string all = joined(Explain(f));
    CHECK_THAT(all, Catch::Contains("classified at the host end of its veth"));
    CHECK_THAT(all, Catch::Contains("carrier slot 12"));
    CHECK_THAT(all, Catch::Contains("shaped there, on its NIC's IFB"));
    // Not the NIC's own redirect: the NIC leaves the pod to its veth.
    CHECK_THAT(all, !Catch::Contains("redirected to the NIC's IFB"));
  }

  SECTION("level default class") {
    f.entry = Entry(0x100031, 7);
    f.daemon = DaemonEntry(77, "web", "app", 0x100031, false, 0);
    CHECK_THAT(joined(Explain(f)), Catch::Contains("default class 10:31"));
    CHECK_THAT(joined(Explain(f)), Catch::Contains("received packets skip the IFB"));
  }

  SECTION("entry from an earlier run, daemon down") {
    f.entry = Entry(0x100100, 7);
    f.daemon_reached = false;
    f.daemon_error = "daemon socket not found at /s: is netqosd running?";
    const Explanation e = Explain(f);
    CHECK(e.classified);
    CHECK_THAT(joined(e), Catch::Contains("stays in force"));
    CHECK_THAT(joined(e), Catch::Contains("names need the daemon"));
  }

  SECTION("entry the daemon does not want") {
    f.entry = Entry(0x100100, 7);
    CHECK_THAT(joined(Explain(f)), Catch::Contains("did not want this entry"));
  }

  SECTION("not a container cgroup") {
    f.path = "/sys/fs/cgroup/system.slice/sshd.service";
    const Explanation e = Explain(f);
    CHECK_FALSE(e.classified);
    CHECK_THAT(joined(e), Catch::Contains("no entry for cgroup id 77"));
    CHECK_THAT(joined(e), Catch::Contains("not a container cgroup"));
  }

  SECTION("container whose pod the kubelet does not list") {
    CHECK_THAT(joined(Explain(f)), Catch::Contains("its pod is not listed by the kubelet"));
  }

  SECTION("daemon not running") {
    f.daemon_reached = false;
    f.daemon_error = "daemon socket not found";
    CHECK_THAT(joined(Explain(f)), Catch::Contains("netqosd is not reachable"));
  }

  SECTION("enforcement off or failed") {
    f.mode = "none";
    CHECK_THAT(joined(Explain(f)), Catch::Contains("--enforcement=bpf"));
    f.mode = "disabled";
    f.mode_error = "no cgroup2 mount";
    CHECK_THAT(joined(Explain(f)), Catch::Contains("failed to start in netqosd: no cgroup2 mount"));
  }

  SECTION("daemon wants an entry the map lacks") {
    f.daemon = DaemonEntry(77, "web", "app", 0x100100, true, 100);
    CHECK_THAT(joined(Explain(f)), Catch::Contains("a map write failed"));
  }

  SECTION("an id without a directory") {
    f.path = "";
    CHECK_THAT(joined(Explain(f)), Catch::Contains("the cgroup is gone"));
  }
}

TEST_CASE("status: the daemon's report and the pinned state", "[ctl]") {
  StatusInput in;
  in.socket = "/s.sock";
  in.pins.pin_dir = "/pins";

  SECTION("daemon down, nothing pinned") {
    in.daemon_error = "daemon socket not found at /s.sock: is netqosd running?";
    std::ostringstream text;
    PrintStatus(in, text);
    CHECK_THAT(text.str(),
               Catch::StartsWith("daemon:      NOT REACHABLE: daemon socket not found"));
    CHECK_THAT(text.str(),
               Catch::Contains("pin dir not found: is enforcement on (--enforcement=bpf) and is "
                               "--bpf-pin-dir right?"));
    const auto j = StatusJson(in);
    CHECK(j["daemon"]["reachable"] == false);
    CHECK(j["daemon"]["error"] == in.daemon_error);
    CHECK(j["pinned"]["exists"] == false);
  }

  SECTION("daemon up, enforcing, maps pinned") {
    admin::GetStatusResponse s;
    s.set_version("0.1.0");
    s.set_pid(123);
    s.set_uptime_seconds(75);
    s.add_socket_paths("/s.sock");
    s.set_containers(2);
    s.set_pods(1);
    s.set_nics_total(1);
    s.set_nics_healthy(1);
    auto* nic = s.add_nics();
    nic->set_nic("eth0");
    nic->set_speed_mbps(10000);
    nic->set_healthy(true);
    nic->set_shaped(true);
    auto* e = s.mutable_enforcement();
    e->set_mode("bpf");
    e->set_cgroup_root("/sys/fs/cgroup");
    e->set_pods_known(true);
    e->add_shaped_nics("eth0");
    auto* p = e->add_problems();
    p->set_object("nic eth9");
    p->set_message("missing");
    p->set_times_seen(3);
    in.daemon = s;
    in.pins.exists = true;
    in.pins.on_bpffs = true;
    bpf::PinnedMapState m;
    m.name = "netqos_cls_v1";
    m.present = true;
    m.counted = true;
    m.entries = 2;
    m.max_entries = 65536;
    in.pins.maps = {m};
    in.pins.egress_link.present = true;
    in.pins.egress_link.prog_name = "netqos_egress";
    in.pins.egress_link.cgroup_id = 1;
    in.pins.egress_link.egress = true;
    in.pins.rx_link.present = true;
    in.pins.rx_link.prog_name = "netqos_rx";
    in.pins.rx_link.cgroup_id = 0;  // defunct
    in.pins.rx_link.ingress = true;
    // Enforcement starts after serving: until the dataplane is open, status says it is starting
    // and shows nothing of this run's enforcement.
    e->set_starting(true);
    in.daemon = s;
    std::ostringstream starting;
    PrintStatus(in, starting);
    CHECK_THAT(starting.str(), Catch::Contains("bpf (STARTING: opening the eBPF dataplane") &&
                                   Catch::Contains("what was pinned keeps enforcing)"));
    CHECK_THAT(starting.str(), !Catch::Contains("classified"));
    CHECK(StatusJson(in)["daemon"]["enforcement"]["starting"] == true);
    e->set_starting(false);
    in.daemon = s;
    std::ostringstream text;
    PrintStatus(in, text);
    CHECK_THAT(text.str(), Catch::Contains("running (netqosd 0.1.0, pid 123, up 1m15s)"));
    CHECK_THAT(text.str(), Catch::Contains("bpf (cgroup root /sys/fs/cgroup"));
    // No pass yet: the first one runs beside serving, and status says so until it is done.
    CHECK_THAT(text.str(), Catch::Contains("first pass STILL RUNNING"));
    e->set_passes(1);
    in.daemon = s;
    std::ostringstream after;
    PrintStatus(in, after);
    CHECK_THAT(after.str(), Catch::Contains("/sys/fs/cgroup, 1 passes, pod list read"));
    CHECK_THAT(after.str(), !Catch::Contains("STILL RUNNING"));
    CHECK_THAT(text.str(), Catch::Contains("nic eth9"));
    CHECK_THAT(text.str(), Catch::Contains("netqos_cls_v1"));
    CHECK_THAT(text.str(), Catch::Contains("egress link: pinned"));
    CHECK_THAT(text.str(), Catch::Contains("cgroup id 1, egress)"));
    CHECK_THAT(text.str(), Catch::Contains("rx link: pinned"));
    CHECK_THAT(text.str(), Catch::Contains("netqos_rx id 0, DEFUNCT"));
    const auto j = StatusJson(in);
    CHECK(j["daemon"]["reachable"] == true);
    CHECK(j["daemon"]["enforcement"]["mode"] == "bpf");
    CHECK(j["daemon"]["nics"][0]["shaped"] == true);
    CHECK(j["pinned"]["maps"][0]["entries"] == 2);
    CHECK(j["pinned"]["egress_link"]["prog_name"] == "netqos_egress");
    CHECK(j["pinned"]["rx_link"]["ingress"] == true);
    CHECK(j["pinned"]["rx_link"]["cgroup_id"] == 0);
  }
}

}  // namespace netqos::ctl
