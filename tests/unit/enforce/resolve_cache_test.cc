// The resolver's cache of pods' cgroups (container_resolver.h): what a resolve takes from it
// without looking at the tree, what forgetting a pod brings back, and which pod a path the
// watcher reports belongs to. The tree is a table behind the port, counting its look-ups.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "enforce/cgroup_changes.h"
#include "enforce/container_resolver.h"

namespace {

using netqos::Result;
using netqos::enforce::CgroupChanges;
using netqos::enforce::ContainerResolver;
using netqos::enforce::PodUidOfCgroupPath;
using netqos::enforce::ResolveCache;

const std::string kUidA = "0f1e2d3c-aaaa-4bbb-8ccc-1234567890ab";
const std::string kUidB = "9a8b7c6d-1111-4222-8333-444455556666";
constexpr const char* kMount = "/mnt";

// Directories (relative to the mount, as the candidates name them) and their ids.
struct TableTree {
  std::map<std::string, uint64_t> dirs;
  int lookups = 0;  // find_dir calls

  netqos::enforce::CgroupTree Port() {
    netqos::enforce::CgroupTree t;
    t.find_dir = [this](const std::string& mount,
                        const std::vector<std::string>& candidates) -> Result<std::string> {
      ++lookups;
      for (const auto& c : candidates) {
        if (dirs.count(c) != 0) return mount + "/" + c;
      }
      return netqos::NotFound("none of the candidates");
    };
    t.cgroup_id = [this](const std::string& dir) -> Result<uint64_t> {
      auto it = dirs.find(dir.substr(std::string(kMount).size() + 1));
      if (it == dirs.end()) return netqos::NotFound(dir);
      return it->second;
    };
    t.list_ids = [](const std::string&) -> Result<std::set<uint64_t>> {
      return std::set<uint64_t>{};
    };
    return t;
  }
};

netqos::pods::PodInfo Pod(const std::string& uid, const std::vector<std::string>& ids) {
  netqos::pods::PodInfo p;
  p.uid = uid;
  p.ns = "ns";
  p.name = "pod-" + uid.substr(0, 4);
  p.qos_class = "Guaranteed";
  for (const auto& id : ids) p.containers.push_back({"c-" + id, "containerd", id, false});
  return p;
}

std::map<std::string, uint64_t> Ids(const netqos::enforce::ResolvedContainers& r) {
  std::map<std::string, uint64_t> out;
  for (const auto& c : r.containers) out[c.container_name] = c.cgroup_id;
  return out;
}

// A cgroupfs layout (the default): kubepods/pod<uid>/<id> for a Guaranteed pod.
struct Fixture {
  Fixture() {
    tree.dirs = {{"kubepods/pod" + kUidA, 10},
                 {"kubepods/pod" + kUidA + "/a1", 11},
                 {"kubepods/pod" + kUidA + "/a2", 12},
                 {"kubepods/pod" + kUidB, 20},
                 {"kubepods/pod" + kUidB + "/b1", 21}};
  }
  TableTree tree;
  ContainerResolver resolver{kMount, netqos::cgroup::CgroupLayout{}, tree.Port()};
  std::vector<netqos::pods::PodInfo> pods = {Pod(kUidA, {"a1", "a2"}), Pod(kUidB, {"b1"})};
};

}  // namespace

TEST_CASE("resolve cache: a second resolve takes every found container from it", "[enforce]") {
  Fixture f;
  ResolveCache cache;
  const auto first = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(Ids(first) == std::map<std::string, uint64_t>{{"c-a1", 11}, {"c-a2", 12}, {"c-b1", 21}});
  CHECK(first.containers[0].pod_cgroup_id == 10);
  CHECK(f.tree.lookups == 5);  // two pods, three containers

  const auto second = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(f.tree.lookups == 5);  // not one more
  CHECK(Ids(second) == Ids(first));
  CHECK(second.containers[0].pod_cgroup_id == 10);
  CHECK(second.containers[0].pod_name() == "pod-0f1e");
  // Without the cache every resolve looks everything up.
  (void)f.resolver.Resolve(f.pods, {});
  CHECK(f.tree.lookups == 10);
}

TEST_CASE(
    "resolve cache: a forgotten pod is looked up again and a recreated cgroup's new id "
    "found",
    "[enforce]") {
  Fixture f;
  ResolveCache cache;
  (void)f.resolver.Resolve(f.pods, {}, &cache);
  // a1's cgroup removed and made again under the same name: a new cgroup, a new id.
  f.tree.dirs["kubepods/pod" + kUidA + "/a1"] = 31;
  const int before = f.tree.lookups;
  // Not forgotten: the cache answers with the old id (why the enforcer forgets on every report).
  CHECK(Ids(f.resolver.Resolve(f.pods, {}, &cache)).at("c-a1") == 11);
  CHECK(f.tree.lookups == before);
  cache.ForgetPod(kUidA);
  const auto after = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(Ids(after) == std::map<std::string, uint64_t>{{"c-a1", 31}, {"c-a2", 12}, {"c-b1", 21}});
  CHECK(f.tree.lookups == before + 3);  // pod A and its two containers; B from the cache
  cache.ForgetAll();
  (void)f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(f.tree.lookups == before + 3 + 5);
}

TEST_CASE("resolve cache: missing containers are looked for on every resolve, gone pods dropped",
          "[enforce]") {
  Fixture f;
  f.pods[1].containers.push_back({"c-b2", "containerd", "b2", false});  // no cgroup yet
  ResolveCache cache;
  auto r = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(r.missing.size() == 1);
  CHECK(f.tree.lookups == 6);
  f.tree.dirs["kubepods/pod" + kUidB + "/b2"] = 22;  // appears, its report not needed
  r = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(r.missing.empty());
  CHECK(Ids(r).at("c-b2") == 22);
  CHECK(f.tree.lookups == 7);
  // Pod B no longer listed (or skipped): dropped from the cache, looked up when it comes back.
  r = f.resolver.Resolve(f.pods, {kUidB}, &cache);
  CHECK(Ids(r).size() == 2);
  CHECK(f.tree.lookups == 7);
  r = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(Ids(r).size() == 4);
  CHECK(f.tree.lookups == 7 + 3);  // all of B again: it was dropped, not kept
}

TEST_CASE("resolve cache: a container's new runtime or its pod's new QoS class is looked up",
          "[enforce]") {
  Fixture f;
  ResolveCache cache;
  (void)f.resolver.Resolve(f.pods, {}, &cache);
  const int before = f.tree.lookups;
  f.pods[0].containers[0].runtime = "cri-o";  // other candidate names
  f.tree.dirs["kubepods/pod" + kUidA + "/crio-a1"] = 13;
  CHECK(Ids(f.resolver.Resolve(f.pods, {}, &cache)).at("c-a1") == 13);
  CHECK(f.tree.lookups == before + 1);
  f.pods[1].qos_class = "Burstable";  // other candidate directories: B is not found there
  const auto r = f.resolver.Resolve(f.pods, {}, &cache);
  CHECK(f.tree.lookups == before + 1 + 2);
  CHECK(r.missing.size() == 1);
}

TEST_CASE("resolve cache: the pod of a cgroup path the watcher reports", "[enforce]") {
  const std::string uid_ = "0f1e2d3c_aaaa_4bbb_8ccc_1234567890ab";
  const std::string id(64, 'e');
  struct Row {
    std::string path;
    std::optional<std::string> uid;
  };
  const std::vector<Row> rows = {
      {"/sys/fs/cgroup/kubepods/pod" + kUidA, kUidA},
      {"/sys/fs/cgroup/kubepods/burstable/pod" + kUidA + "/" + id, kUidA},
      {"/sys/fs/cgroup/kubepods/burstable/pod" + kUidA + "/" + id + "/nested/deeper", kUidA},
      {"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ +
           ".slice",
       kUidA},
      {"/sys/fs/cgroup/kubepods.slice/kubepods-pod" + uid_ + ".slice/cri-containerd-" + id +
           ".scope",
       kUidA},
      {"/sys/fs/cgroup/kubepods/pod0123456789abcdef0123456789abcdef/" + id,
       "0123456789abcdef0123456789abcdef"},
      // Above the pods: no pod to name.
      {"/sys/fs/cgroup/kubepods", std::nullopt},
      {"/sys/fs/cgroup/kubepods/burstable", std::nullopt},
      {"/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice", std::nullopt},
      {"/sys/fs/cgroup/kubepods/podnot-a-uid/" + id, std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& row : rows) {
    INFO("path \"" << row.path << "\"");
    CHECK(PodUidOfCgroupPath(row.path) == row.uid);
  }
}

TEST_CASE("cgroup changes: reports name their pods, others and a lost watch name everything",
          "[enforce]") {
  CgroupChanges changes;
  changes.Record("/sys/fs/cgroup/kubepods/pod" + kUidA + "/abc");
  changes.Record("/sys/fs/cgroup/kubepods/pod" + kUidB);
  auto taken = changes.Take();
  CHECK_FALSE(taken.all);
  CHECK(taken.pods == std::set<std::string>{kUidA, kUidB});
  taken = changes.Take();  // taken once
  CHECK_FALSE(taken.all);
  CHECK(taken.pods.empty());

  changes.Record("/sys/fs/cgroup/kubepods/burstable");
  CHECK(changes.Take().all);
  CHECK_FALSE(changes.Take().all);

  changes.Lost();
  CHECK(changes.Take().all);
  changes.Record("/sys/fs/cgroup/kubepods/pod" + kUidA);
  CHECK(changes.Take().all);  // for good: what the watch lost never reports
}
