#include "enforce/veth_sync.h"

#include <catch2/catch.hpp>

#include "enforce/pod_addresses.h"
#include "support/observed_container.h"
#include "unit/enforce/fake_tables.h"

namespace {

using netqos::Result;
using netqos::Status;
using netqos::core::NicId;
using netqos::enforce::ClassEntry;
using netqos::enforce::ClassTable;
using netqos::enforce::DesiredContainer;
using netqos::enforce::kClassIngressShaped;
using netqos::enforce::kClassVeth;
using netqos::enforce::NodeRoute;
using netqos::enforce::ParsePodAddress;
using netqos::enforce::VethAttacher;
using netqos::enforce::VethLink;
using netqos::enforce::VethSource;
using netqos::enforce::VethSync;
using netqos::enforce::VethSyncResult;
using netqos::enforce::VethTable;
using netqos::pods::PodInfo;

// Every kernel call of the fakes, in order.
using Log = std::vector<std::string>;

struct FakeSource : VethSource {
  Result<std::vector<VethLink>> Veths() override {
    if (fail) return netqos::Unavailable("netlink down");
    return veths;
  }
  Result<std::vector<NodeRoute>> Routes() override { return std::vector<NodeRoute>{}; }
  std::vector<VethLink> veths;
  bool fail = false;
};

// Records "<what> <key>=<value>" for a write and "clear <what> <key>" for a removal.
template <typename K, typename V>
Status Put(Log& log, const char* what, std::map<K, V>& m, K key, V value) {
  log.push_back(std::string(what) + " " + std::to_string(key) + "=" + std::to_string(value));
  m[key] = value;
  return Status::Ok();
}
template <typename K, typename V>
Status Drop(Log& log, const char* what, std::map<K, V>& m, K key) {
  log.push_back(std::string("clear ") + what + " " + std::to_string(key));
  m.erase(key);
  return Status::Ok();
}

struct FakeVethTable : VethTable {
  explicit FakeVethTable(Log& l) : log(l) {}
  Result<std::map<int, uint64_t>> ListVeths() const override { return veths; }
  Status SetVeth(int ifindex, uint64_t id) override { return Put(log, "veth", veths, ifindex, id); }
  Status ClearVeth(int ifindex) override { return Drop(log, "veth", veths, ifindex); }
  Result<std::map<uint16_t, uint64_t>> ListCarriers() const override { return carriers; }
  Status SetCarrier(uint16_t slot, uint64_t id) override {
    return Put(log, "carrier", carriers, slot, id);
  }
  Status ClearCarrier(uint16_t slot) override { return Drop(log, "carrier", carriers, slot); }
  Log& log;
  std::map<int, uint64_t> veths;
  std::map<uint16_t, uint64_t> carriers;
};

struct FakeAttacher : VethAttacher {
  explicit FakeAttacher(Log& l) : log(l) {}
  Status Attach(int veth, int home) override {
    if (fail.count(veth) != 0) return netqos::FailedPrecondition("a foreign filter");
    log.push_back("attach " + std::to_string(veth) + "->" + std::to_string(home));
    attached[veth] = home;
    return Status::Ok();
  }
  Status Detach(int veth) override {
    log.push_back("detach " + std::to_string(veth));
    attached.erase(veth);
    return Status::Ok();
  }
  Log& log;
  std::map<int, int> attached;
  std::set<int> fail;
};

struct Node {
  Log log;
  FakeSource source;
  FakeVethTable table{log};
  FakeAttacher attacher{log};
  netqos::enforce::testing::FakeClassTable classes;
  VethSync sync{{&source, &table, &attacher}};
  std::vector<PodInfo> pods;
  std::map<uint64_t, DesiredContainer> desired;
  const NicId nic{"", "eth0"};

  Node() {
    classes.on_set = [this](uint64_t id, const ClassEntry& e) {
      log.push_back("class " + std::to_string(id) + " slot=" + std::to_string(e.slot) +
                    ((e.flags & kClassVeth) != 0 ? " veth" : ""));
    };
  }

  void AddPod(const std::string& uid, const std::string& ip, int veth,
              std::vector<uint64_t> containers) {
    PodInfo p;
    p.uid = uid;
    p.ns = "ns";
    p.name = "pod-" + uid;
    p.phase = "Running";
    p.ips = {ip};
    pods.push_back(p);
    VethLink v;
    v.ifindex = veth;
    v.name = "veth" + std::to_string(veth);
    v.peer_addresses = {*ParsePodAddress(ip)};
    source.veths.push_back(v);
    for (uint64_t id : containers) {
      DesiredContainer d;
      d.pod = netqos::testing::PodMetaOf(uid, "", p.name);
      d.container_name = "c" + std::to_string(id);
      d.entry.priority = 0x100000u + static_cast<uint32_t>(id);
      d.entry.flags = kClassIngressShaped;
      desired[id] = d;
      classes.entries[id] = d.entry;  // what the pass wrote before the veths
    }
  }

  VethSyncResult Sync(bool full = false) {
    VethSyncResult r = sync.Sync(pods, desired, {nic}, {{nic, 4}}, classes, full);
    for (const auto& [id, e] : r.marked) desired.at(id).entry = e;
    return r;
  }

  size_t Find(const std::string& what) const {
    auto it = std::find(log.begin(), log.end(), what);
    REQUIRE(it != log.end());
    return static_cast<size_t>(it - log.begin());
  }
};

}  // namespace

TEST_CASE("veth sync: slots and programs are in place before a class entry names them",
          "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11, 12});
  const VethSyncResult r = n.Sync();
  CHECK(r.problems.empty());
  CHECK(r.veths == 1);
  REQUIRE(r.marked.size() == 2);
  const uint16_t s11 = r.marked.at(11).slot;
  const uint16_t s12 = r.marked.at(12).slot;
  CHECK(s11 != 0);
  CHECK(s12 != 0);
  CHECK(s11 != s12);
  CHECK((r.marked.at(11).flags & (kClassVeth | kClassIngressShaped)) ==
        (kClassVeth | kClassIngressShaped));
  CHECK(n.attacher.attached == std::map<int, int>{{7, 4}});  // redirect to eth0's IFB
  CHECK(n.table.veths == std::map<int, uint64_t>{{7, 11}});
  CHECK(n.table.carriers == std::map<uint16_t, uint64_t>{{s11, 11}, {s12, 12}});
  // The order that keeps every packet classified.
  const size_t carrier = n.Find("carrier " + std::to_string(s11) + "=11");
  const size_t attach = n.Find("attach 7->4");
  const size_t veth = n.Find("veth 7=11");
  const size_t mark = n.Find("class 11 slot=" + std::to_string(s11) + " veth");
  CHECK(carrier < mark);
  CHECK(attach < veth);
  CHECK(veth < mark);

  // Nothing changed: nothing is written again.
  n.log.clear();
  const VethSyncResult again = n.Sync();
  CHECK(again.marked.empty());
  CHECK(n.log.empty());
  // A full resync re-attaches (repairs drift) but rewrites no class entry.
  n.Sync(true);
  CHECK(n.Find("attach 7->4") == 0);
  CHECK(std::none_of(n.log.begin(), n.log.end(),
                     [](const std::string& l) { return l.rfind("class ", 0) == 0; }));
}

TEST_CASE("veth sync: a veth that cannot be attached leaves its pod unmarked", "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  n.AddPod("p2", "10.5.0.3", 8, {21});
  n.attacher.fail.insert(7);
  const VethSyncResult r = n.Sync();
  CHECK(r.veths == 1);
  CHECK(r.marked.count(11) == 0);
  CHECK(r.marked.count(21) == 1);
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].key() == "veth:veth7");
  CHECK(r.problems[0].message.find("ns/pod-p1: a foreign filter") == 0);
  CHECK(n.table.veths.count(7) == 0);
}

TEST_CASE("veth sync: a pod whose veth went is unmarked first, then its veth and slots go",
          "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  const uint16_t slot = n.Sync().marked.at(11).slot;
  n.log.clear();
  n.source.veths.clear();  // the CNI deleted it (the pod is being torn down)
  const VethSyncResult r = n.Sync();
  CHECK(r.veths == 0);
  REQUIRE(r.marked.count(11) == 1);
  CHECK(r.marked.at(11).slot == 0);
  CHECK((r.marked.at(11).flags & kClassVeth) == 0);
  CHECK((r.marked.at(11).flags & kClassIngressShaped) != 0);  // the rest of the entry stays
  CHECK(n.Find("class 11 slot=0") < n.Find("detach 7"));
  CHECK(n.Find("detach 7") < n.Find("clear veth 7"));
  CHECK(n.Find("clear veth 7") < n.Find("clear carrier " + std::to_string(slot)));
  CHECK(n.table.carriers.empty());
}

TEST_CASE("veth sync: when the veths cannot be read, every pod keeps what it had", "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  n.Sync();
  n.log.clear();
  n.source.fail = true;
  const VethSyncResult r = n.Sync(true);
  CHECK(r.marked.empty());
  CHECK(n.log.empty());
  CHECK(r.veths == 1);
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].key() == "veths");
  CHECK(r.problems[0].message.find("netlink down") != std::string::npos);
}

TEST_CASE("veth sync: a restarted daemon adopts slots and marks, and drops veths of pods gone",
          "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  ClassEntry adopted = n.desired.at(11).entry;
  adopted.slot = 42;
  adopted.flags |= kClassVeth;
  n.classes.entries[11] = adopted;
  n.table.carriers[42] = 11;
  n.table.veths[7] = 11;
  n.table.veths[9] = 99;  // a veth of a pod gone while no netqosd ran

  VethSync fresh({&n.source, &n.table, &n.attacher});
  fresh.Adopt(n.classes.entries);
  fresh.ApplyMarks(n.desired);
  CHECK(n.desired.at(11).entry == adopted);  // the pass writes the entry as it is
  n.log.clear();
  const VethSyncResult r = fresh.Sync(n.pods, n.desired, {n.nic}, {{n.nic, 4}}, n.classes, false);
  CHECK(r.marked.empty());  // slot 42 kept: no packet changes class
  CHECK(n.table.carriers == std::map<uint16_t, uint64_t>{{42, 11}});
  CHECK(n.Find("attach 7->4") < n.Find("detach 9"));
  CHECK(n.table.veths == std::map<int, uint64_t>{{7, 11}});
}

TEST_CASE("veth sync: switched off, it takes away what an earlier run placed", "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  ClassEntry adopted = n.desired.at(11).entry;
  adopted.slot = 42;
  adopted.flags |= kClassVeth;
  n.classes.entries[11] = adopted;
  n.table.carriers[42] = 11;
  n.table.veths[7] = 11;

  VethSync off({nullptr, &n.table, &n.attacher});
  REQUIRE(off.enabled());
  off.Adopt(n.classes.entries);
  off.ApplyMarks(n.desired);  // as a whole pass does: the entry is written as the map holds it
  n.log.clear();
  const VethSyncResult r = off.Sync(n.pods, n.desired, {n.nic}, {{n.nic, 4}}, n.classes, false);
  CHECK(r.problems.empty());
  CHECK(r.veths == 0);
  CHECK(n.classes.entries.at(11).slot == 0);
  CHECK((n.classes.entries.at(11).flags & kClassVeth) == 0);
  CHECK(n.Find("class 11 slot=0") < n.Find("detach 7"));
  CHECK(n.table.veths.empty());
  CHECK(n.table.carriers.empty());
}

TEST_CASE("veth sync: a pod whose veth is not there yet is waited for", "[enforce]") {
  Node n;
  n.AddPod("p1", "10.5.0.2", 7, {11});
  n.source.veths.clear();  // the CNI has not made it yet
  CHECK(n.Sync().veths == 0);
  CHECK(n.sync.waiting());
  n.AddPod("p2", "10.5.0.3", 8, {21});  // p2's veth and p1's arrive
  VethLink v;
  v.ifindex = 7;
  v.name = "veth7";
  v.peer_addresses = {*ParsePodAddress("10.5.0.2")};
  n.source.veths.push_back(v);
  CHECK(n.Sync().veths == 2);
  CHECK_FALSE(n.sync.waiting());
  // Off, nothing is waited for.
  VethSync off({nullptr, &n.table, &n.attacher});
  CHECK_FALSE(off.waiting());
}
