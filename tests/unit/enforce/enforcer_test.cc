// Enforcer through its ports: the kernel side (class map, pod address map, NIC shaping) is faked,
// the cgroup tree is plain directories in a temp dir (ids are their inodes), the kubelet's pod
// list is a string and the clock is the test's. Covers what a node lives through: a container
// appears, is removed, the daemon restarts and adopts, a NIC fails, the class map is full, a pod
// behind a CNI comes and goes.
#include "enforce/enforcer.h"

#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "enforce/pod_addresses.h"
#include "pods/pod_list_reader.h"
#include "shaping/htb_plan.h"
#include "support/plain_cgroup_tree.h"
#include "support/temp_dir.h"
#include "unit/enforce/fake_cgroup_watch.h"
#include "unit/enforce/fake_tables.h"

namespace {

using namespace std::chrono_literals;
using netqos::Result;
using netqos::Status;
using netqos::core::AllocationInfo;
using netqos::core::Nic;
using netqos::core::NicId;
using netqos::core::NicState;
using netqos::enforce::AllocationSnapshot;
using netqos::enforce::ClassEntry;
using netqos::enforce::ClassTable;
using netqos::enforce::Clock;
using netqos::enforce::EdtRateTable;
using netqos::enforce::Enforcer;
using netqos::enforce::EnforcerOptions;
using netqos::enforce::EnforcerPorts;
using netqos::enforce::LinkShaper;
using netqos::enforce::ParsePodAddress;
using netqos::enforce::PodAddress;
using netqos::enforce::PodAddressTable;
using netqos::shaping::HtbPlan;
using netqos::shaping::kQdiscMajor;
using netqos::shaping::LevelMinor;
using netqos::shaping::MakeHandle;
using netqos::shaping::ModeChoice;
using netqos::shaping::QosLevel;
using netqos::shaping::ShapingMode;
using netqos::shaping::ShapingReason;
using netqos::testing::TempDir;

constexpr uint32_t kLeafBase =
    0x100000;  // 10:0 (TC_H_MAKE(0x10 << 16, 0)); a container leaf is 10:1xx and up

// Every fake is called from the enforcer's worker thread and read from the test's.
using netqos::enforce::testing::FakeCgroupWatches;
using netqos::enforce::testing::FakeClassTable;

using FakeAddresses = netqos::enforce::testing::FakePodAddressTable;

// The EDT map: cgroup id -> bytes per second.
struct FakeEdtTable : EdtRateTable {
  Result<std::map<uint64_t, uint64_t>> List() const override {
    std::lock_guard<std::mutex> l(mu);
    ++lists;
    return rates;
  }
  Status Set(uint64_t id, uint64_t rate) override {
    std::lock_guard<std::mutex> l(mu);
    rates[id] = rate;
    ++writes;
    return Status::Ok();
  }
  Status Clear(uint64_t id) override {
    std::lock_guard<std::mutex> l(mu);
    rates.erase(id);
    return Status::Ok();
  }
  std::map<uint64_t, uint64_t> Rates() const {
    std::lock_guard<std::mutex> l(mu);
    return rates;
  }
  mutable std::mutex mu;
  std::map<uint64_t, uint64_t> rates;
  int writes = 0;
  mutable int lists = 0;
};

struct FakeShaper : LinkShaper {
  Result<ModeChoice> Apply(const Nic& nic, const HtbPlan& egress, const HtbPlan& ingress) override {
    std::lock_guard<std::mutex> l(mu);
    ++applies[nic.id.name];
    const uint32_t reclaimed = MakeHandle(kQdiscMajor, LevelMinor(QosLevel::kReclaimed));
    if (const auto* c = egress.Find(reclaimed))
      reclaimed_ceil[nic.id.name].first = c->ceil_bps / netqos::shaping::kBitsPerMbit;
    if (const auto* c = ingress.Find(reclaimed))
      reclaimed_ceil[nic.id.name].second = c->ceil_bps / netqos::shaping::kBitsPerMbit;
    if (failing.count(nic.id.name) != 0) return netqos::Internal("tc says no");
    std::vector<uint32_t> leaves;
    for (const auto& c : egress.classes) {
      if (!c.container_key) continue;
      leaves.push_back(c.handle);
      leaf_bps[nic.id.name][c.handle] = c.rate_bps;
    }
    applied[nic.id.name] = leaves;
    trees[nic.id.name] = {egress.shapes, ingress.shapes};
    if (edt.count(nic.id.name) != 0)
      return ModeChoice{ShapingMode::kEdt, "test: edt", ShapingReason::kFlag, {}};
    return ModeChoice{ShapingMode::kHtb, "test: htb", ShapingReason::kFlag, {}};
  }
  Status Patch(const Nic& nic, const netqos::shaping::PlanDelta& egress,
               const netqos::shaping::PlanDelta& ingress) override {
    std::lock_guard<std::mutex> l(mu);
    ++patches[nic.id.name];
    if (failing.count(nic.id.name) != 0 || failing_patch.count(nic.id.name) != 0) {
      return netqos::Internal("tc says no to the patch");
    }
    for (const auto& c : egress.added) {
      if (!c.container_key) continue;
      applied[nic.id.name].push_back(c.handle);
      leaf_bps[nic.id.name][c.handle] = c.rate_bps;
    }
    const uint32_t reclaimed = MakeHandle(kQdiscMajor, LevelMinor(QosLevel::kReclaimed));
    for (const auto& c : egress.changed) {
      if (c.handle == reclaimed) {
        reclaimed_ceil[nic.id.name].first = c.ceil_bps / netqos::shaping::kBitsPerMbit;
      }
    }
    for (const auto& c : ingress.changed) {
      if (c.handle == reclaimed) {
        reclaimed_ceil[nic.id.name].second = c.ceil_bps / netqos::shaping::kBitsPerMbit;
      }
    }
    ingress_added[nic.id.name] += ingress.added.size();
    return Status::Ok();
  }
  // The reclaimed level's ceiling (egress, ingress) last applied on `nic`.
  std::pair<uint64_t, uint64_t> ReclaimedCeil(const std::string& nic) const {
    std::lock_guard<std::mutex> l(mu);
    auto it = reclaimed_ceil.find(nic);
    return it == reclaimed_ceil.end() ? std::pair<uint64_t, uint64_t>{} : it->second;
  }
  std::vector<uint32_t> Leaves(const std::string& nic) const {
    std::lock_guard<std::mutex> l(mu);
    auto it = applied.find(nic);
    return it == applied.end() ? std::vector<uint32_t>{} : it->second;
  }
  mutable std::mutex mu;
  std::set<std::string> failing;
  std::set<std::string> edt;  // NICs whose egress runs in EDT mode
  std::map<std::string, std::vector<uint32_t>> applied;
  std::map<std::string, int> applies;
  std::map<std::string, int> patches;
  std::map<std::string, std::map<uint32_t, uint64_t>> leaf_bps;  // egress leaf rates, per NIC
  std::set<std::string> failing_patch;          // Patch fails there, Apply does not
  std::map<std::string, size_t> ingress_added;  // classes Patch created on the IFB
  std::map<std::string, std::pair<uint64_t, uint64_t>> reclaimed_ceil;
  // Whether the last whole apply on a NIC installs its (egress, ingress) tree (HtbPlan::shapes).
  std::map<std::string, std::pair<bool, bool>> trees;
};

AllocationInfo Alloc(const std::string& nic, uint32_t mbps) {
  AllocationInfo a;
  a.qos_level = "shared_cores";
  a.if_name = nic;
  a.egress = mbps;
  a.ingress = mbps;
  return a;
}

struct FakePod {
  std::string uid;
  std::string container_id;
  std::vector<std::string> ips;
  bool host_network = false;
};

// A pod as NRI reports it (app/nri_plugin_setup.h's PodInfoOf): the pod list's metadata, with
// the runtime's addresses.
netqos::pods::PodInfo RuntimePod(const FakePod& p, std::vector<std::string> ips) {
  netqos::pods::PodInfo pod;
  pod.uid = p.uid;
  pod.ns = "ns";
  pod.name = "pod-" + p.uid;
  pod.qos_class = "Guaranteed";
  pod.annotations = {{"katalyst.kubewharf.io/qos_level", "shared_cores"}};
  pod.host_network = p.host_network;
  pod.ips = std::move(ips);
  return pod;
}

bool IsLeaf(const std::optional<ClassEntry>& e) {
  return e && e->priority >= kLeafBase + 0x100 && e->priority < kLeafBase + 0x10000;
}

// The node: a cgroupfs tree in a temp dir, the kubelet's pod list, the allocations and two NICs
// (eth0, eth1), all fed to an Enforcer through fakes. The cgroup watches are the fake's: a
// container's cgroup made or removed here is reported at once, on the test's thread, so that
// WaitUntilIdle then covers its handling.
class Node {
 public:
  Node() { ::mkdir(dir.file("kubepods").c_str(), 0755); }
  ~Node() { Stop(); }

  // A Guaranteed pod with one started container "app"; its cgroup made when `started`.
  void AddPod(const FakePod& p, bool started = true) {
    {
      std::lock_guard<std::mutex> l(mu);
      pods.push_back(p);
    }
    if (started) StartContainer(p);
  }
  // The runtime makes the pod's and its container's cgroups; the watch reports them.
  void StartContainer(const FakePod& p) {
    for (const std::string& d : {PodDir(p), ContainerDir(p)}) {
      ::mkdir(d.c_str(), 0755);
      watches.Created(d);
    }
  }
  void StopContainer(const FakePod& p) {
    for (const std::string& d : {ContainerDir(p), PodDir(p)}) {
      ::rmdir(d.c_str());
      watches.Removed(d);
    }
  }
  void RemovePod(const std::string& uid) {
    std::optional<FakePod> gone;
    {
      std::lock_guard<std::mutex> l(mu);
      for (auto it = pods.begin(); it != pods.end(); ++it) {
        if (it->uid != uid) continue;
        gone = *it;
        allocations.erase(uid);
        pods.erase(it);
        break;
      }
    }
    if (gone) StopContainer(*gone);
  }
  void Allocate(const std::string& uid, const std::string& nic, uint32_t mbps) {
    std::lock_guard<std::mutex> l(mu);
    allocations[uid]["app"] = Alloc(nic, mbps);
  }
  // Lists a pod with a started container, allocates it `mbps` on `nic` and waits for the
  // container's leaf there: returns the leaf's handle (the class entry's priority).
  uint32_t CapPod(const FakePod& p, const std::string& nic, uint32_t mbps) {
    AddPod(p);
    Allocate(p.uid, nic, mbps);
    enforcer->OnAllocated(p.uid);
    const uint64_t id = IdOf(p);
    REQUIRE(AfterIdle([&] { return IsLeaf(table.Get(id)); }));
    const uint32_t leaf = table.Get(id)->priority;
    REQUIRE(shaper.Leaves(nic) == std::vector{leaf});
    return leaf;
  }
  // Whole applies and patches the shaper saw on `nic`.
  std::pair<int, int> ShaperCalls(const std::string& nic) {
    std::lock_guard<std::mutex> l(shaper.mu);
    return {shaper.applies[nic], shaper.patches[nic]};
  }
  std::string PodDir(const FakePod& p) const { return dir.file("kubepods/pod" + p.uid); }
  std::string ContainerDir(const FakePod& p) const { return PodDir(p) + "/" + p.container_id; }
  uint64_t IdOf(const FakePod& p) const {
    struct stat st {};
    REQUIRE(::stat(ContainerDir(p).c_str(), &st) == 0);
    return st.st_ino;
  }

  std::string PodList() const {
    std::lock_guard<std::mutex> l(mu);
    nlohmann::json items = nlohmann::json::array();
    for (const auto& p : pods) {
      nlohmann::json status = {
          {"qosClass", "Guaranteed"},
          {"phase", "Running"},
          {"containerStatuses",
           {{{"name", "app"}, {"containerID", "containerd://" + p.container_id}}}}};
      if (!p.ips.empty()) {
        status["podIPs"] = nlohmann::json::array();
        for (const auto& ip : p.ips) status["podIPs"].push_back({{"ip", ip}});
      }
      items.push_back({{"metadata",
                        {{"uid", p.uid},
                         {"name", "pod-" + p.uid},
                         {"namespace", "ns"},
                         {"annotations", {{"katalyst.kubewharf.io/qos_level", "shared_cores"}}}}},
                       {"spec", {{"hostNetwork", p.host_network}}},
                       {"status", status}});
    }
    return nlohmann::json{{"items", items}}.dump();
  }

  void Start() {
    EnforcerOptions o;
    o.pods_source = "test";
    o.cgroup_mount = dir.path();
    o.is_enforced = [](const Nic&) { return true; };
    o.resync = resync;
    o.full_resync = full_resync;
    o.pods_refresh = 1h;
    o.shaping.low_priority_floor_percent = low_priority_floor_percent;
    o.shaping.shape_idle = shape_idle;
    o.layout.additional_roots = additional_roots;
    EnforcerPorts p;
    auto reader = std::make_shared<netqos::pods::PodListReader>(
        [this]() -> Result<std::string> {
          std::unique_lock<std::mutex> l(mu);
          pods_cv.wait(l, [this] { return !hold_pod_list; });
          l.unlock();
          return PodList();
        },
        "test");
    p.read_pods = [this, reader](bool force) {
      if (force) ++forced_pod_reads;
      return reader->Read(force);
    };
    p.snapshot = [this] {
      std::lock_guard<std::mutex> l(mu);
      AllocationSnapshot s;
      s.allocations = allocations;
      for (const char* name : {"eth0", "eth1"}) {
        Nic n;
        n.id = NicId{"", name};
        n.ifindex = name[3] == '0' ? 2 : 3;
        n.speed_mbps = 1000;
        n.enabled = true;
        s.nics.push_back(n);
        NicState st;
        st.egress.allocatable = 900;
        st.ingress.allocatable = 850;
        s.machine_state[n.id] = st;
      }
      return s;
    };
    p.pod_allocations = [this](const std::vector<std::string>& uids) {
      std::lock_guard<std::mutex> l(mu);
      ++pod_allocation_reads;
      netqos::core::PodEntries few;
      for (const auto& uid : uids) {
        if (auto it = allocations.find(uid); it != allocations.end()) few.insert(*it);
      }
      return few;
    };
    p.table = &table;
    p.shaper = &shaper;
    p.addresses = &addresses;
    p.edt = &edt;
    p.watch_cgroups = watches.Port();
    p.tenant_policy = [policy = tenant_policy] { return policy; };
    p.cgroup_tree = netqos::testing::PlainCgroupTree();
    p.cgroup_tree.find_dir = [this, find = p.cgroup_tree.find_dir](
                                 const std::string& mount,
                                 const std::vector<std::string>& candidates) {
      ++cgroup_lookups;
      return find(mount, candidates);
    };
    p.now = [this] {
      std::lock_guard<std::mutex> l(mu);
      return now;
    };
    auto e = Enforcer::Start(std::move(o), std::move(p));
    REQUIRE(e.ok());
    enforcer = std::move(*e);
    // The first pass runs on the worker: the cases below start from its result.
    if (!hold_pod_list) REQUIRE(AfterIdle([&] { return enforcer->Status().passes >= 1; }));
  }
  void ReleasePodList() {
    {
      std::lock_guard<std::mutex> l(mu);
      hold_pod_list = false;
    }
    pods_cv.notify_all();
  }
  void Stop() {
    if (enforcer) enforcer->Stop();
    enforcer.reset();
  }

  // Whether pred holds once the worker has handled everything told to it so far.
  template <typename Pred>
  bool AfterIdle(Pred pred) {
    return enforcer->WaitUntilIdle(5s) && pred();
  }
  bool HasProblem(const std::string& key_part) {
    for (const auto& p : enforcer->Status().problems) {
      if (p.key.find(key_part) != std::string::npos) return true;
    }
    return false;
  }

  TempDir dir;
  FakeCgroupWatches watches;
  FakeClassTable table;
  FakeAddresses addresses;
  FakeShaper shaper;
  FakeEdtTable edt;
  mutable std::mutex mu;
  std::vector<FakePod> pods;
  netqos::core::PodEntries allocations;
  int pod_allocation_reads = 0;  // reads of a few pods' allocations (the new-container path)
  Clock::time_point now = Clock::now();
  std::optional<uint32_t> low_priority_floor_percent;  // set before Start
  bool shape_idle = false;                             // --shape-idle-nics; set before Start
  std::vector<std::string> additional_roots;           // --addition-cgroup-paths; set before Start
  // Passes come from events in most cases: no resync comes while they run. Set before Start.
  std::chrono::milliseconds resync = 1h;
  std::chrono::milliseconds full_resync = 0ms;  // every resync full
  std::atomic<int> cgroup_lookups{0};           // the cgroup tree's find_dir calls
  std::atomic<int> forced_pod_reads{0};         // pod list reads parsed even when unchanged
  std::shared_ptr<const netqos::enforce::TenantPolicy> tenant_policy;  // null: the default
  // While set, reading the pod list blocks (a slow kubelet or a big node's first pass).
  bool hold_pod_list = false;
  std::condition_variable pods_cv;
  std::unique_ptr<Enforcer> enforcer;
};

}  // namespace

TEST_CASE("enforcer: a new container gets its class entry and its leaf on its NIC", "[enforce]") {
  Node node;
  node.Start();
  CHECK(node.table.entries.empty());
  const FakePod p{"11111111-0000-0000-0000-000000000001", "c1", {}};
  node.CapPod(p, "eth1", 100);
  CHECK(node.shaper.Leaves("eth0").empty());
  // The status is counted at the end of the pass that wrote the leaf.
  CHECK(node.AfterIdle([&] { return node.enforcer->Status().capped == 1; }));
}

TEST_CASE("enforcer: a new container's leaves are sent alone without applying the NIC again",
          "[enforce]") {
  Node node;
  node.shape_idle = true;  // the NIC's tree is there before its first leaf
  node.Start();
  const int applies_before = node.ShaperCalls("eth1").first;
  node.CapPod({"11111111-0000-0000-0000-00000000000a", "c10", {}}, "eth1", 100);
  const auto [applies, patches] = node.ShaperCalls("eth1");
  CHECK(patches >= 1);
  CHECK(applies == applies_before);
  std::lock_guard<std::mutex> l(node.shaper.mu);
  CHECK(node.shaper.ingress_added["eth1"] == 1);  // its IFB leaf too
}

TEST_CASE("enforcer: a container started between passes is placed from its pod's newest allocation",
          "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-00000000000c", "c12", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();  // the first pass lists the pod; its container has no cgroup yet
  // A newer allocation the enforcer is not told of: no pass runs before the container starts.
  node.Allocate(p.uid, "eth0", 150);
  node.StartContainer(p);
  const uint64_t id = node.IdOf(p);
  REQUIRE(node.AfterIdle([&] { return IsLeaf(node.table.Get(id)); }));
  const uint32_t leaf = node.table.Get(id)->priority;
  REQUIRE(node.shaper.Leaves("eth0") == std::vector{leaf});
  std::lock_guard<std::mutex> l(node.shaper.mu);
  CHECK(node.shaper.leaf_bps["eth0"][leaf] == netqos::shaping::MbitToBits(150));
  std::lock_guard<std::mutex> n(node.mu);
  CHECK(node.pod_allocation_reads >= 1);
}

TEST_CASE("enforcer: a container the runtime is starting has its class when the call returns",
          "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-00000000000d", "c13", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  // NRI's StartContainer comes once the cgroup exists, and may come before the watcher's event
  // for it has been handled: the call waits for a wake-up that saw the container.
  node.StartContainer(p);
  REQUIRE(node.enforcer->OnContainerStarting(p.container_id, 5s));
  CHECK(IsLeaf(node.table.Get(node.IdOf(p))));
}

TEST_CASE("enforcer: a starting container the wake-up could not place is reported unplaced",
          "[enforce]") {
  Node node;
  node.Start();
  // Not in the pod list (nor its cgroup on the node): the wake-up ends without its class, and the
  // NRI plugin must not hear that it is in place.
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(node.enforcer->OnContainerStarting("c-unlisted", 5s));
  CHECK(std::chrono::steady_clock::now() - start < 5s);  // it was the wake-up, not the timeout
}

TEST_CASE(
    "enforcer: a container the pod list does not have yet is placed at its start from what the "
    "runtime said",
    "[enforce]") {
  Node node;
  node.Start();
  // The kubelet's pod list lags: neither the pod nor its container is listed. NRI told of both
  // at CreateContainer, before the cgroup existed.
  const FakePod p{"11111111-0000-0000-0000-00000000000e", "c15", {"10.244.1.15"}};
  node.Allocate(p.uid, "eth0", 100);
  netqos::pods::ContainerInfo container;
  container.name = "app";
  container.id = p.container_id;
  node.enforcer->OnRuntimeContainer(RuntimePod(p, p.ips), container);
  node.StartContainer(p);
  REQUIRE(node.enforcer->OnContainerStarting(p.container_id, 5s));
  const uint64_t id = node.IdOf(p);
  CHECK(IsLeaf(node.table.Get(id)));
  const std::map<PodAddress, uint64_t> want = {{*ParsePodAddress("10.244.1.15"), id}};
  CHECK(node.addresses.Snapshot() == want);

  // Once the runtime removed the pod, the pod list (which never listed it) is what counts: its
  // class goes with its cgroup.
  node.StopContainer(p);
  node.enforcer->OnRuntimeContainerRemoved(p.uid, p.container_id);
  node.enforcer->OnRuntimePodRemoved(p.uid);
  CHECK(node.AfterIdle([&] { return !node.table.Get(id).has_value(); }));
}

TEST_CASE("enforcer: a container announced while stopping is not waited for", "[enforce]") {
  Node node;
  node.Start();
  node.enforcer->Stop();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(node.enforcer->OnContainerStarting("c14", 5s));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("enforcer: an idle NIC gets its trees with its first cap and loses them with its last",
          "[enforce]") {
  Node node;
  node.Start();
  REQUIRE(node.AfterIdle([&] { return node.ShaperCalls("eth1").first >= 1; }));
  {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    CHECK(node.shaper.trees["eth1"] == std::pair{false, false});  // nothing capped: its own root
  }
  auto reason = [&] { return node.enforcer->Status().shaping_modes["eth1"].reason; };
  CHECK(reason() == "test: htb; nothing capped: the NIC's own root");
  const int applies_before = node.ShaperCalls("eth1").first;
  const FakePod p{"11111111-0000-0000-0000-00000000000e", "c14", {}};
  node.CapPod(p, "eth1", 100);
  // Installing a tree is a whole apply: a patch has nothing to add classes to.
  CHECK(node.ShaperCalls("eth1").first > applies_before);
  {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    CHECK(node.shaper.trees["eth1"] == std::pair{true, true});
    CHECK(node.shaper.trees["eth0"] == std::pair{false, false});  // the other NIC stays idle
  }
  CHECK(node.AfterIdle([&] { return reason() == "test: htb"; }));
  node.RemovePod(p.uid);
  node.enforcer->OnPodRemoved(p.uid);
  CHECK(node.AfterIdle([&] {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    return node.shaper.trees["eth1"] == std::pair{false, false};
  }));
}

TEST_CASE("enforcer: with --shape-idle-nics every enforced NIC has its trees from the start",
          "[enforce]") {
  Node node;
  node.shape_idle = true;
  node.Start();
  REQUIRE(node.AfterIdle([&] { return node.ShaperCalls("eth0").first >= 1; }));
  std::lock_guard<std::mutex> l(node.shaper.mu);
  CHECK(node.shaper.trees["eth0"] == std::pair{true, true});
  CHECK(node.shaper.trees["eth1"] == std::pair{true, true});
}

TEST_CASE("enforcer: a patch the kernel refuses is followed by a whole apply", "[enforce]") {
  Node node;
  node.shape_idle = true;  // a patch, not the first cap's whole apply
  node.shaper.failing_patch.insert("eth1");
  node.Start();
  const int applies_before = node.ShaperCalls("eth1").first;
  node.CapPod({"11111111-0000-0000-0000-00000000000b", "c11", {}}, "eth1", 100);
  const auto [applies, patches] = node.ShaperCalls("eth1");
  CHECK(patches >= 1);
  CHECK(applies > applies_before);
}

TEST_CASE("enforcer: Start returns before the first pass, which runs on the worker", "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-000000000009", "c9", {}};
  node.AddPod(p);
  node.Allocate(p.uid, "eth0", 100);
  node.hold_pod_list = true;  // a slow pod source: the first pass cannot finish
  node.Start();               // returns all the same: netqosd serves the kubelet meanwhile
  CHECK(node.enforcer->Status().passes == 0);
  CHECK(node.table.entries.empty());
  node.ReleasePodList();
  CHECK(node.AfterIdle([&] { return node.enforcer->Status().passes >= 1; }));
  const uint64_t id = node.IdOf(p);
  CHECK(node.AfterIdle([&] { return IsLeaf(node.table.Get(id)); }));
}

TEST_CASE("enforcer: a removed pod's entry and leaf go at once", "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-000000000002", "c2", {}};
  node.AddPod(p);
  node.Allocate(p.uid, "eth0", 50);
  node.Start();  // the first pass runs in Start
  const uint64_t id = node.IdOf(p);
  REQUIRE(IsLeaf(node.table.Get(id)));
  node.enforcer->OnPodRemoved(p.uid);
  node.RemovePod(p.uid);
  REQUIRE(node.AfterIdle([&] { return !node.table.Get(id).has_value(); }));
  CHECK(node.shaper.Leaves("eth0").empty());
}

TEST_CASE("enforcer: a restarted daemon adopts the leaves the class map points at", "[enforce]") {
  Node node;
  const FakePod a{"11111111-0000-0000-0000-000000000003", "c3", {}};
  const FakePod b{"11111111-0000-0000-0000-000000000004", "c4", {}};
  node.AddPod(a);
  node.AddPod(b);
  node.Allocate(a.uid, "eth0", 100);
  node.Allocate(b.uid, "eth0", 200);
  // What the previous daemon left: b on minor 0x1a7, a on 0x1a3 (not what a fresh start picks).
  node.table.entries[node.IdOf(a)] = ClassEntry{kLeafBase + 0x1a3, 0, 2, 1};
  node.table.entries[node.IdOf(b)] = ClassEntry{kLeafBase + 0x1a7, 0, 2, 1};
  node.Start();
  CHECK(node.table.Get(node.IdOf(a))->priority == kLeafBase + 0x1a3);
  CHECK(node.table.Get(node.IdOf(b))->priority == kLeafBase + 0x1a7);
  CHECK(node.shaper.Leaves("eth0") == std::vector<uint32_t>{kLeafBase + 0x1a3, kLeafBase + 0x1a7});
}

TEST_CASE("enforcer: a failing NIC is reported and the others are shaped", "[enforce]") {
  Node node;
  node.shaper.failing = {"eth0"};
  const FakePod a{"11111111-0000-0000-0000-000000000005", "c5", {}};
  const FakePod b{"11111111-0000-0000-0000-000000000006", "c6", {}};
  node.AddPod(a);
  node.AddPod(b);
  node.Allocate(a.uid, "eth0", 100);
  node.Allocate(b.uid, "eth1", 100);
  node.Start();
  CHECK(node.HasProblem("nic:eth0"));
  CHECK_FALSE(node.HasProblem("nic:eth1"));
  const auto shaped = node.enforcer->Status().shaped_nics;
  CHECK(shaped == std::vector<std::string>{"eth1"});
  CHECK(node.shaper.Leaves("eth1").size() == 1);
  // Its containers are still classified (their packets take the class once the NIC recovers).
  CHECK(IsLeaf(node.table.Get(node.IdOf(a))));

  {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    node.shaper.failing.clear();
  }
  node.enforcer->OnTopologyChanged();
  CHECK(node.AfterIdle([&] { return node.shaper.Leaves("eth0").size() == 1; }));
  CHECK_FALSE(node.HasProblem("nic:eth0"));
}

TEST_CASE("enforcer: a full class map is reported per container, the others kept", "[enforce]") {
  Node node;
  node.table.capacity = 1;
  const FakePod a{"11111111-0000-0000-0000-000000000007", "c7", {}};
  const FakePod b{"11111111-0000-0000-0000-000000000008", "c8", {}};
  node.AddPod(a);
  node.AddPod(b);
  node.Allocate(a.uid, "eth0", 100);
  node.Allocate(b.uid, "eth0", 100);
  node.Start();
  const bool a_in = node.table.Get(node.IdOf(a)).has_value();
  const bool b_in = node.table.Get(node.IdOf(b)).has_value();
  CHECK(a_in != b_in);  // one fits
  const uint64_t out = a_in ? node.IdOf(b) : node.IdOf(a);
  CHECK(node.HasProblem("cgroup:" + std::to_string(out)));
}

TEST_CASE("enforcer: a pod behind a CNI has its addresses mapped while it runs", "[enforce]") {
  Node node;
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-000000000009", "c9", {"10.244.1.7", "fd00::7"}};
  node.AddPod(p);
  node.Allocate(p.uid, "eth0", 50);
  node.enforcer->OnAllocated(p.uid);
  const uint64_t id = node.IdOf(p);
  const std::map<PodAddress, uint64_t> want = {{*ParsePodAddress("10.244.1.7"), id},
                                               {*ParsePodAddress("fd00::7"), id}};
  REQUIRE(node.AfterIdle([&] { return node.addresses.Snapshot() == want; }));

  node.enforcer->OnPodRemoved(p.uid);
  node.RemovePod(p.uid);
  CHECK(node.AfterIdle([&] { return node.addresses.Snapshot().empty(); }));
}

TEST_CASE(
    "enforcer: the runtime's addresses of a pod listed without any come with its first container",
    "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-0000000000a1", "ca1", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  // NRI's RunPodSandbox: malformed and repeated entries are dropped.
  node.enforcer->OnRuntimePod(
      RuntimePod(p, {"10.244.1.8", "10.244.1.999", "not-an-ip", "10.244.1.8"}));
  node.StartContainer(p);
  REQUIRE(node.enforcer->OnContainerStarting(p.container_id, 5s));
  const std::map<PodAddress, uint64_t> want = {{*ParsePodAddress("10.244.1.8"), node.IdOf(p)}};
  CHECK(node.addresses.Snapshot() == want);
}

TEST_CASE("enforcer: a hostNetwork pod never takes the runtime's addresses", "[enforce]") {
  Node node;
  FakePod p{"11111111-0000-0000-0000-0000000000a2", "ca2", {}};
  p.host_network = true;
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  node.enforcer->OnRuntimePod(RuntimePod(p, {"192.168.0.10"}));  // the node's own address
  node.StartContainer(p);
  REQUIRE(node.enforcer->OnContainerStarting(p.container_id, 5s));
  CHECK(node.addresses.Snapshot().empty());
}

TEST_CASE("enforcer: a pod's runtime addresses are forgotten when it is removed", "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-0000000000a3", "ca3", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  node.enforcer->OnRuntimePod(RuntimePod(p, {"10.244.1.9"}));
  node.enforcer->OnRuntimePodRemoved(p.uid);  // NRI's RemovePodSandbox
  node.StartContainer(p);
  REQUIRE(node.enforcer->OnContainerStarting(p.container_id, 5s));
  CHECK(node.addresses.Snapshot().empty());
}

TEST_CASE("enforcer: a new container on an EDT NIC gets its rate without a listing of the map",
          "[enforce]") {
  Node node;
  node.shaper.edt = {"eth0"};
  const FakePod a{"11111111-0000-0000-0000-0000000000e5", "ce5", {}};
  const FakePod b{"11111111-0000-0000-0000-0000000000e6", "ce6", {}};
  node.AddPod(a);
  node.AddPod(b, /*started=*/false);
  node.Allocate(a.uid, "eth0", 100);
  node.Allocate(b.uid, "eth0", 80);
  node.Start();
  REQUIRE(IsLeaf(node.table.Get(node.IdOf(a))));
  const uint64_t leaf_a = node.table.Get(node.IdOf(a))->priority;
  REQUIRE(node.edt.Rates() == std::map<uint64_t, uint64_t>{{leaf_a, 12'500'000}});
  int lists = 0, writes = 0;
  {
    std::lock_guard<std::mutex> l(node.edt.mu);
    lists = node.edt.lists;
    writes = node.edt.writes;
  }

  // The runtime starts b: its entry is written on the new-container path, alone.
  node.StartContainer(b);
  REQUIRE(node.enforcer->OnContainerStarting(b.container_id, 5s));
  REQUIRE(IsLeaf(node.table.Get(node.IdOf(b))));
  const uint64_t leaf_b = node.table.Get(node.IdOf(b))->priority;
  CHECK(node.edt.Rates() ==
        std::map<uint64_t, uint64_t>{{leaf_a, 12'500'000}, {leaf_b, 10'000'000}});
  std::lock_guard<std::mutex> l(node.edt.mu);
  CHECK(node.edt.lists == lists);
  CHECK(node.edt.writes == writes + 1);
}

TEST_CASE(
    "enforcer: containers on a NIC in EDT mode get their rates in the EDT map, kept while "
    "the NIC fails, cleared when they go",
    "[enforce]") {
  Node node;
  node.shaper.edt = {"eth0"};
  const FakePod a{"11111111-0000-0000-0000-0000000000e1", "ce1", {}};
  const FakePod b{"11111111-0000-0000-0000-0000000000e2", "ce2", {}};
  node.AddPod(a);
  node.AddPod(b);
  node.Allocate(a.uid, "eth0", 100);  // EDT NIC: 12.5 MB/s in the map
  node.Allocate(b.uid, "eth1", 200);  // HTB NIC: its leaf only
  node.Start();
  // The map is keyed by a's leaf (the class handle its entry carries), not by its cgroup.
  REQUIRE(IsLeaf(node.table.Get(node.IdOf(a))));
  const uint64_t leaf_a = node.table.Get(node.IdOf(a))->priority;
  CHECK(node.edt.Rates() == std::map<uint64_t, uint64_t>{{leaf_a, 12'500'000}});
  const auto modes = node.enforcer->Status().shaping_modes;
  REQUIRE(modes.size() == 2);
  CHECK(modes.at("eth0").mode == ShapingMode::kEdt);
  CHECK(modes.at("eth1").mode == ShapingMode::kHtb);
  CHECK(modes.at("eth0").reason == "test: edt");

  // A stale entry (a container gone while the daemon was down) is cleared; an unchanged rate is
  // not rewritten (that would restart the container's pacing clock).
  REQUIRE(node.edt.Set(999999, 1).ok());
  const int writes = node.edt.writes;
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.AfterIdle([&] { return node.edt.Rates().count(999999) == 0; }));
  CHECK(node.edt.writes == writes);
  CHECK(node.edt.Rates().at(leaf_a) == 12'500'000);

  // The NIC fails to apply: its program still paces, so the rates stay.
  {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    node.shaper.failing = {"eth0"};
  }
  node.Allocate(a.uid, "eth0", 50);
  node.enforcer->OnAllocated(a.uid);
  REQUIRE(node.AfterIdle([&] { return node.HasProblem("nic:eth0"); }));
  CHECK(node.edt.Rates().count(leaf_a) == 1);
  {
    std::lock_guard<std::mutex> l(node.shaper.mu);
    node.shaper.failing.clear();
  }
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.AfterIdle([&] {
    return node.edt.Rates() == std::map<uint64_t, uint64_t>{{leaf_a, 6'250'000}};
  }));

  node.enforcer->OnPodRemoved(a.uid);
  node.RemovePod(a.uid);
  CHECK(node.AfterIdle([&] { return node.edt.Rates().empty(); }));
}

TEST_CASE(
    "enforcer: with low-priority groups the reclaimed level's ceiling on each NIC follows "
    "its group, both directions",
    "[enforce]") {
  Node node;
  node.low_priority_floor_percent = 5;
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-0000000000a1", "ca1", {}};
  node.AddPod(p);
  node.Allocate(p.uid, "eth0", 300);  // shared_cores
  node.enforcer->OnAllocated(p.uid);
  // Allocatable 900 egress / 850 ingress, minus the 300 the shared container requests.
  CHECK(node.AfterIdle([&] {
    return node.shaper.ReclaimedCeil("eth0") == std::pair<uint64_t, uint64_t>{600, 550};
  }));
  CHECK(node.shaper.ReclaimedCeil("eth1") == std::pair<uint64_t, uint64_t>{900, 850});
  // Requests beyond the allocatable leave the floor: 5 % of it.
  node.Allocate(p.uid, "eth0", 900);
  node.enforcer->OnAllocated(p.uid);
  CHECK(node.AfterIdle([&] {
    return node.shaper.ReclaimedCeil("eth0") == std::pair<uint64_t, uint64_t>{45, 42};
  }));
}

TEST_CASE("enforcer: an allocation of a pod not started yet moves the low-priority group at once",
          "[enforce]") {
  Node node;
  node.low_priority_floor_percent = 5;
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-0000000000a3", "ca3", {}};
  node.AddPod(p, /*started=*/false);  // admitted, its containers not created yet
  node.Allocate(p.uid, "eth0", 300);
  node.enforcer->OnAllocated(p.uid);
  CHECK(node.AfterIdle([&] {
    return node.shaper.ReclaimedCeil("eth0") == std::pair<uint64_t, uint64_t>{600, 550};
  }));
}

TEST_CASE("enforcer: an allocation of a pod not started yet runs no whole pass", "[enforce]") {
  Node node;
  const FakePod running{"11111111-0000-0000-0000-0000000000a4", "ca4", {}};
  node.AddPod(running);
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-0000000000a5", "ca5", {}};
  node.AddPod(p, /*started=*/false);
  const auto before = node.ShaperCalls("eth0");
  const auto passes = node.enforcer->Status().passes;
  node.Allocate(p.uid, "eth0", 100);
  node.enforcer->OnAllocated(p.uid);
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK(node.enforcer->Status().passes == passes);
  CHECK(node.ShaperCalls("eth0") == before);
  // Its container, once started, is placed (the pod list is read again for its unknown id).
  node.StartContainer(p);
  const uint64_t id = node.IdOf(p);
  CHECK(node.AfterIdle([&] { return IsLeaf(node.table.Get(id)); }));
}

TEST_CASE("enforcer: without low-priority groups the reclaimed level borrows up to the link",
          "[enforce]") {
  Node node;
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-0000000000a2", "ca2", {}};
  node.AddPod(p);
  node.Allocate(p.uid, "eth0", 300);
  node.enforcer->OnAllocated(p.uid);
  CHECK(node.AfterIdle([&] {
    return node.shaper.ReclaimedCeil("eth0") == std::pair<uint64_t, uint64_t>{1000, 1000};
  }));
}

TEST_CASE("desired options: low-priority groups send reclaimed traffic through the IFB",
          "[enforce]") {
  netqos::shaping::ShapingConfig s;
  const auto reclaimed = static_cast<size_t>(QosLevel::kReclaimed);
  CHECK_FALSE(netqos::enforce::DesiredOptionsFor(s, true).ingress_level_limited[reclaimed]);
  s.low_priority_floor_percent = 5;
  CHECK(netqos::enforce::DesiredOptionsFor(s, true).ingress_level_limited[reclaimed]);
}

TEST_CASE("enforcer: each pass is timed under its scope", "[enforce]") {
  Node node;
  node.Start();
  auto count = [&](const std::string& scope) {
    return node.enforcer->Status().pass_seconds.at(scope).count();
  };
  // The pass is counted (what Start waits for) just before its time is recorded, and both before
  // the wake-up is done.
  CHECK(count("full") == 1);  // the first pass
  CHECK(count("all") == 0);
  CHECK(count("containers") == 0);
  CHECK(node.enforcer->Status().pass_seconds.at("full").bounds ==
        netqos::enforce::PassSecondsBounds());
  node.CapPod({"11111111-0000-0000-0000-000000000031", "c31", {}}, "eth0", 100);
  CHECK(count("containers") + count("all") >= 1);
  node.enforcer->OnTopologyChanged();
  CHECK(node.AfterIdle([&] { return count("all") >= 1; }));
  const auto status = node.enforcer->Status();
  CHECK(status.pass_failures == 0);
  for (const auto& [target, n] : status.kernel_failures) {
    INFO(target);
    CHECK(n == 0);
  }
  CHECK(status.kernel_failures.size() == 4);
}

TEST_CASE(
    "enforcer: failed kernel writes are counted by target, an unreadable class map fails "
    "the pass",
    "[enforce]") {
  Node node;
  node.shaper.failing = {"eth0"};
  node.table.capacity = 0;
  const FakePod a{"11111111-0000-0000-0000-000000000032", "c32", {}};
  node.AddPod(a);
  node.Allocate(a.uid, "eth0", 100);
  node.Start();
  auto status = node.enforcer->Status();
  CHECK(status.kernel_failures.at("shaping") >= 1);
  const uint64_t class_map = status.kernel_failures.at("class_map");
  CHECK(class_map >= 1);
  CHECK(status.kernel_failures.at("edt_map") == 0);
  CHECK(status.pass_failures == 0);  // the pass went on: the other NIC and containers

  {
    std::lock_guard<std::mutex> l(node.table.mu);
    node.table.list_fails = true;
  }
  const uint64_t passes = node.enforcer->Status().passes;
  node.enforcer->OnTopologyChanged();
  CHECK(node.AfterIdle([&] { return node.enforcer->Status().pass_failures >= 1; }));
  status = node.enforcer->Status();
  CHECK(status.passes == passes);  // no pass finished
  CHECK(status.kernel_failures.at("class_map") > class_map);
  CHECK(node.HasProblem("class-map"));
}

TEST_CASE("enforcer: a container cgroup the cgroup-events port reports gets its class",
          "[enforce]") {
  Node node;
  const FakePod p{"11111111-0000-0000-0000-000000000041", "c41", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  REQUIRE(node.watches.Roots() == std::vector<std::string>{node.dir.file("kubepods")});
  // Made but not reported: the enforcer watches nothing itself, so nothing happens.
  ::mkdir(node.PodDir(p).c_str(), 0755);
  ::mkdir(node.ContainerDir(p).c_str(), 0755);
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK_FALSE(node.table.Get(node.IdOf(p)).has_value());
  // Reported through the port: the container is added between passes.
  REQUIRE(node.watches.Created(node.ContainerDir(p)) == 1);
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK(IsLeaf(node.table.Get(node.IdOf(p))));
  CHECK(node.shaper.Leaves("eth0") == std::vector{node.table.Get(node.IdOf(p))->priority});
}

TEST_CASE(
    "enforcer: one cgroup watch per kubelet root, a root whose watch fails left out, all stopped "
    "with the enforcer",
    "[enforce]") {
  Node node;
  node.additional_roots = {"extra", "broken"};
  node.watches.fail_roots = {node.dir.file("broken")};
  node.Start();
  CHECK(node.watches.Roots() ==
        std::vector<std::string>{node.dir.file("kubepods"), node.dir.file("extra")});
  CHECK(node.watches.Running() == 2);
  node.Stop();
  CHECK(node.watches.Running() == 0);
}

TEST_CASE("enforcer: WaitUntilIdle waits for the wake-up in flight and fails once stopping",
          "[enforce]") {
  Node node;
  node.hold_pod_list = true;  // the first pass cannot finish
  node.Start();
  CHECK_FALSE(node.enforcer->WaitUntilIdle(100ms));
  CHECK(node.enforcer->Status().passes == 0);
  node.ReleasePodList();
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK(node.enforcer->Status().passes == 1);
  // What it was told before the call is handled when it returns: a whole pass here.
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK(node.enforcer->Status().passes == 2);
  node.enforcer->Stop();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(node.enforcer->WaitUntilIdle(5s));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE(
    "enforcer: WaitUntilIdle also covers the whole pass a new container of an aggregated "
    "namespace asks for",
    "[enforce]") {
  Node node;
  auto policy = std::make_shared<netqos::enforce::TenantPolicy>();
  policy->namespaces["ns"].aggregate.egress_ceil_bps = netqos::shaping::MbitToBits(500);
  node.tenant_policy = policy;
  const FakePod p{"11111111-0000-0000-0000-000000000042", "c42", {}};
  node.AddPod(p, /*started=*/false);
  node.Allocate(p.uid, "eth0", 100);
  node.Start();
  const auto all_before = node.enforcer->Status().pass_seconds.at("all").count();
  // The wake-up that takes the container hands it to a whole pass (its aggregate's class
  // changes) by recording one more event: the wait lasts until that pass is done too.
  node.StartContainer(p);
  REQUIRE(node.enforcer->WaitUntilIdle(5s));
  CHECK(node.table.Get(node.IdOf(p)).has_value());
  CHECK(node.enforcer->Status().pass_seconds.at("all").count() == all_before + 1);
}

namespace {

// How many passes of `scope` ("resync", "full", ...) the enforcer has timed.
uint64_t Passes(Node& node, const std::string& scope) {
  return node.enforcer->Status().pass_seconds.at(scope).count();
}

// Waits (at most 5 s) until pred holds.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace

TEST_CASE(
    "enforcer: a whole pass looks up only the cgroups reported changed, a recreated one "
    "under its new id",
    "[enforce]") {
  Node node;
  node.Start();
  const FakePod p1{"11111111-0000-0000-0000-000000000001", "c1", {}};
  const FakePod p2{"11111111-0000-0000-0000-000000000002", "c2", {}};
  node.AddPod(p1);
  node.AddPod(p2);
  node.enforcer->OnTopologyChanged();  // a whole pass: both resolved, and remembered
  REQUIRE(node.AfterIdle([&] { return node.table.Get(node.IdOf(p2)).has_value(); }));
  const int lookups = node.cgroup_lookups;
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.AfterIdle([] { return true; }));
  CHECK(node.cgroup_lookups == lookups);  // nothing reported: nothing looked up

  // p1's container cgroup removed and made again under its name (a new cgroup: made before the
  // old one goes, so that it cannot get the old one's inode).
  const uint64_t old_id = node.IdOf(p1);
  const std::string fresh = node.PodDir(p1) + "/fresh";
  REQUIRE(::mkdir(fresh.c_str(), 0755) == 0);
  REQUIRE(::rmdir(node.ContainerDir(p1).c_str()) == 0);
  REQUIRE(::rename(fresh.c_str(), node.ContainerDir(p1).c_str()) == 0);
  const uint64_t new_id = node.IdOf(p1);
  REQUIRE(new_id != old_id);
  node.watches.Removed(node.ContainerDir(p1));
  node.watches.Created(node.ContainerDir(p1));
  node.enforcer->OnTopologyChanged();
  CHECK(node.AfterIdle([&] { return node.table.Get(new_id).has_value(); }));
  CHECK_FALSE(node.table.Get(old_id).has_value());
  CHECK(node.table.Get(node.IdOf(p2)).has_value());
  // The created container's own look-up, then its pod's in the whole pass (pod and container):
  // p2 taken as it was.
  CHECK(node.cgroup_lookups <= lookups + 3);
  CHECK(node.cgroup_lookups > lookups);
}

TEST_CASE("enforcer: without a running watch every whole pass looks every cgroup up", "[enforce]") {
  Node node;
  node.watches.fail_roots = {node.dir.file("kubepods")};
  const FakePod p1{"11111111-0000-0000-0000-000000000001", "c1", {}};
  node.AddPod(p1);  // before the start: the first pass lists it, no watch would tell of it
  node.Start();
  REQUIRE(node.AfterIdle([&] { return node.table.Get(node.IdOf(p1)).has_value(); }));
  const int lookups = node.cgroup_lookups;
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.AfterIdle([] { return true; }));
  CHECK(node.cgroup_lookups == lookups + 2);  // its pod and its container
}

TEST_CASE("enforcer: a watch that failed makes every later whole pass look every cgroup up",
          "[enforce]") {
  Node node;
  node.Start();
  const FakePod p1{"11111111-0000-0000-0000-000000000001", "c1", {}};
  node.AddPod(p1);
  node.enforcer->OnTopologyChanged();
  REQUIRE(node.AfterIdle([&] { return node.table.Get(node.IdOf(p1)).has_value(); }));
  node.watches.Error(netqos::Status(netqos::StatusCode::kResourceExhausted, "inotify watches"));
  REQUIRE(node.AfterIdle([] { return true; }));  // the error's own whole pass
  for (int i = 0; i < 2; ++i) {
    const int lookups = node.cgroup_lookups;
    node.enforcer->OnTopologyChanged();
    REQUIRE(node.AfterIdle([] { return true; }));
    CHECK(node.cgroup_lookups == lookups + 2);
  }
}

TEST_CASE(
    "enforcer: a resync between full ones repairs a deleted class entry without looking "
    "cgroups up or re-applying unchanged trees",
    "[enforce]") {
  Node node;
  node.resync = 50ms;
  node.full_resync = 1h;
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-000000000001", "c1", {}};
  const uint32_t leaf = node.CapPod(p, "eth0", 100);
  // After a resync that followed the cap (which resolved p), the ones after it look nothing up.
  uint64_t resyncs = Passes(node, "resync");
  REQUIRE(Eventually([&] { return Passes(node, "resync") >= resyncs + 1; }));
  const int lookups = node.cgroup_lookups;
  const auto shaper_calls = node.ShaperCalls("eth0");
  resyncs = Passes(node, "resync");
  REQUIRE(Eventually([&] { return Passes(node, "resync") >= resyncs + 2; }));
  CHECK(node.cgroup_lookups == lookups);
  CHECK(node.ShaperCalls("eth0") == shaper_calls);
  CHECK(Passes(node, "full") == 1);   // the first pass only
  CHECK(node.forced_pod_reads == 1);  // ditto: the resyncs parse no unchanged pod list

  // Someone deletes the container's entry: the next resync writes it again.
  {
    std::lock_guard<std::mutex> l(node.table.mu);
    node.table.entries.erase(node.IdOf(p));
  }
  CHECK(Eventually([&] {
    const auto e = node.table.Get(node.IdOf(p));
    return e && e->priority == leaf;
  }));
  CHECK(Passes(node, "full") == 1);
}

TEST_CASE("enforcer: a full resync looks every cgroup up and re-applies every tree", "[enforce]") {
  Node node;
  node.resync = 50ms;  // every resync full (full_resync 0)
  node.Start();
  const FakePod p{"11111111-0000-0000-0000-000000000001", "c1", {}};
  node.CapPod(p, "eth0", 100);
  const int lookups = node.cgroup_lookups;
  const int applies = node.ShaperCalls("eth0").first;
  const uint64_t fulls = Passes(node, "full");
  REQUIRE(Eventually([&] { return Passes(node, "full") >= fulls + 2; }));
  CHECK(node.cgroup_lookups >= lookups + 4);  // pod and container, each full resync
  CHECK(node.ShaperCalls("eth0").first >= applies + 2);
  CHECK(node.forced_pod_reads >= 3);
  CHECK(Passes(node, "resync") == 0);
}
