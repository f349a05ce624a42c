// What a whole pass's result holds on the heap at 10,000 containers: the containers as the resolver
// gives them and the DesiredState the pass computes from them (its DesiredContainer per container
// is what the enforcer keeps as EnforcerStatus::classes and copies into the published status).
// Heap in use is glibc's mallinfo2 (in-use bytes, malloc's own headers included) after minus
// before. The representation before pod metadata was shared (a copy of the pod's uid, namespace,
// name, annotations and tenant entry per container) is rebuilt here, member for member, from the
// same pass, so both are measured in one run on the same input. In-process: no daemon, no root.
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "enforce/container_resolver.h"
#include "enforce/desired_state.h"
#include "shaping/htb_plan.h"
#include "unit/enforce/desired_world.h"

namespace {

using netqos::core::NicId;
using netqos::core::StringMap;
using netqos::enforce::DesiredContainer;
using netqos::enforce::DesiredState;
using netqos::enforce::ObservedContainer;

// The members DesiredContainer and ObservedContainer had before, in their order: a copy of the
// pod's strings (and, observed, its annotations) per container.
struct LegacyDesiredContainer {
  netqos::enforce::ClassEntry entry;
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string container_name;
  std::optional<NicId> nic;
  uint32_t allocated_mbps = 0;
  std::optional<uint64_t> leaf_key;
  netqos::enforce::LeafRates rates;
  std::vector<NicId> leaf_nics;
  uint32_t burst_bytes = 0;
  std::string tenant_entry;
  std::vector<netqos::enforce::TenantDecision> decisions;
  std::optional<uint32_t> aggregate_minor;
};
struct LegacyObservedContainer {
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string container_name;
  StringMap pod_annotations;
  uint64_t cgroup_id = 0;
  uint64_t pod_cgroup_id = 0;
};

size_t HeapInUse() { return mallinfo2().uordblks; }

const NicId kEth0{"", "eth0"};

// Pods as a kubelet lists them: a random v4 uid, a deployment's pod name, namespaces of a few
// teams (some names longer than the string's inline buffer), the annotations the kubelet and the
// usual controllers add.
std::vector<netqos::pods::PodInfo> MakePods(int pods, int containers_per_pod) {
  static const std::vector<std::string> kNamespaces = {
      "payments-prod", "payments-staging", "checkout",          "search-indexing",
      "observability", "kube-system",      "ml-training-batch", "web"};
  static const std::vector<std::string> kApps = {"checkout-api", "cart", "recommendation-engine",
                                                 "frontend", "indexer-worker"};
  static const std::vector<std::string> kContainers = {"app", "istio-proxy", "log-shipper"};
  std::mt19937_64 rng(42);
  auto hex = [&](int n) {
    static const char* kDigits = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < n; ++i) s += kDigits[rng() % 16];
    return s;
  };
  auto alnum = [&](int n) {
    static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";
    std::string s;
    for (int i = 0; i < n; ++i) s += kChars[rng() % 27];
    return s;
  };
  std::vector<netqos::pods::PodInfo> out;
  for (int p = 0; p < pods; ++p) {
    netqos::pods::PodInfo pod;
    pod.uid = hex(8) + "-" + hex(4) + "-4" + hex(3) + "-8" + hex(3) + "-" + hex(12);
    pod.ns = kNamespaces[static_cast<size_t>(p) % kNamespaces.size()];
    pod.name = kApps[static_cast<size_t>(p) % kApps.size()] + "-" + hex(10) + "-" + alnum(5);
    pod.qos_class = "Burstable";
    pod.annotations = {{"kubernetes.io/config.seen", "2026-12-07T10:11:12.123456789Z"},
                       {"kubernetes.io/config.source", "api"},
                       {"kubectl.kubernetes.io/restartedAt", "2026-12-01T09:00:00Z"},
                       {"prometheus.io/scrape", "true"}};
    for (int c = 0; c < containers_per_pod; ++c) {
      pod.containers.push_back(
          {kContainers[static_cast<size_t>(c) % kContainers.size()], "containerd", hex(64), false});
    }
    out.push_back(std::move(pod));
  }
  return out;
}

// Every directory "exists", its id a hash of its path (stored nowhere, so the resolver's output is
// all the heap a resolve leaves): the resolver's path checks and look-ups run, no file system is
// read. The pass below checks that no two containers got one id.
netqos::enforce::CgroupTree FakeTree() {
  netqos::enforce::CgroupTree tree;
  tree.find_dir = [](const std::string& mount,
                     const std::vector<std::string>& candidates) -> netqos::Result<std::string> {
    return mount + "/" + candidates.front();
  };
  tree.cgroup_id = [](const std::string& dir) -> netqos::Result<uint64_t> {
    return std::hash<std::string>{}(dir) | 1;
  };
  tree.list_ids = [](const std::string&) -> netqos::Result<std::set<uint64_t>> {
    return std::set<uint64_t>{};
  };
  return tree;
}

struct Figures {
  size_t observed = 0, legacy_observed = 0;  // the resolved containers
  size_t state = 0, legacy_state = 0;        // the whole DesiredState, its input dropped
  size_t classes = 0, legacy_classes = 0;    // its by_cgroup (EnforcerStatus::classes)
  size_t copy = 0, legacy_copy = 0;          // one more copy of it (a reader's Status())
};

Figures Measure(int pods, int per_pod) {
  Figures f;
  const auto pod_list = MakePods(pods, per_pod);
  netqos::core::PodEntries allocations;
  for (const auto& pod : pod_list) {
    for (const auto& c : pod.containers) {
      allocations[pod.uid][c.name] = netqos::testing::Alloc("shared_cores", kEth0, 1, 1);
    }
  }
  netqos::enforce::ContainerResolver resolver("/sys/fs/cgroup", netqos::cgroup::CgroupLayout{},
                                              FakeTree());
  auto tenant = std::make_shared<netqos::enforce::TenantPolicy>();
  tenant->namespaces["payments-prod"];
  tenant->namespaces["ml-training-batch"];
  tenant->namespaces["search-indexing"];
  netqos::enforce::DesiredOptions options;
  options.set_priority = true;
  options.tenant = tenant;
  netqos::shaping::MinorAllocator minors;

  size_t h0 = HeapInUse();
  const size_t before_pass = h0;
  auto resolved =
      std::make_unique<netqos::enforce::ResolvedContainers>(resolver.Resolve(pod_list, {}));
  f.observed = HeapInUse() - h0;
  {
    h0 = HeapInUse();
    std::vector<LegacyObservedContainer> legacy;
    legacy.reserve(resolved->containers.size());
    for (const auto& c : resolved->containers) {
      legacy.push_back({c.pod_uid(), c.pod_namespace(), c.pod_name(), c.container_name,
                        c.pod_annotations(), c.cgroup_id, c.pod_cgroup_id});
    }
    f.legacy_observed = HeapInUse() - h0;
  }

  auto state = std::make_unique<DesiredState>(netqos::enforce::ComputeDesiredState(
      {}, allocations, resolved->containers, {{kEth0, 100000}}, {}, options, minors));
  // The pass's input is dropped, as the enforcer drops it; what it shared with the result (the
  // pods' metadata) stays, counted here.
  resolved.reset();
  f.state = HeapInUse() - before_pass;
  if (state->by_cgroup.size() != pod_list.size() * static_cast<size_t>(per_pod)) {
    std::fprintf(stderr, "the pass classified %zu containers, not %zu\n", state->by_cgroup.size(),
                 pod_list.size() * static_cast<size_t>(per_pod));
    std::exit(1);
  }

  {
    h0 = HeapInUse();
    auto copy = std::make_unique<std::map<uint64_t, DesiredContainer>>(state->by_cgroup);
    f.copy = HeapInUse() - h0;
  }
  {
    h0 = HeapInUse();
    auto legacy = std::make_unique<std::map<uint64_t, LegacyDesiredContainer>>();
    for (const auto& [id, d] : state->by_cgroup) {
      (*legacy)[id] = {d.entry,          d.pod_uid(),      d.pod_namespace(),
                       d.pod_name(),     d.container_name, netqos::testing::NicOf(d),
                       d.allocated_mbps, d.leaf_key,       d.rates,
                       *d.leaf_nics,     d.burst_bytes,    d.tenant_entry(),
                       d.decisions,      d.aggregate_minor};
    }
    f.legacy_classes = HeapInUse() - h0;
    h0 = HeapInUse();
    auto copy = std::make_unique<std::map<uint64_t, LegacyDesiredContainer>>(*legacy);
    f.legacy_copy = HeapInUse() - h0;
  }
  h0 = HeapInUse();
  state->by_cgroup.clear();  // frees the pods' metadata too: the result held the last reference
  f.classes = h0 - HeapInUse();
  f.legacy_state = f.state - f.classes + f.legacy_classes;
  return f;
}

void Row(const char* what, size_t before, size_t after, size_t containers) {
  std::printf("| %s | %.2f MB (%zu B/container) | %.2f MB (%zu B/container) | %.2fx |\n", what,
              static_cast<double>(before) / 1e6, before / containers,
              static_cast<double>(after) / 1e6, after / containers,
              static_cast<double>(after) / static_cast<double>(before));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int total = quick ? 100 : 10000;
  std::printf("sizeof DesiredContainer: %zu (was %zu); sizeof ObservedContainer: %zu (was %zu)\n",
              sizeof(DesiredContainer), sizeof(LegacyDesiredContainer), sizeof(ObservedContainer),
              sizeof(LegacyObservedContainer));
  for (int per_pod : {1, 2}) {
    const int pods = total / per_pod;
    const Figures f = Measure(pods, per_pod);
    const auto n = static_cast<size_t>(total);
    std::printf("\n%d pods x %d containers (heap in use, mallinfo2)\n\n", pods, per_pod);
    std::printf("| what | per-container copies | shared | after / before |\n");
    std::printf("|---|---|---|---|\n");
    Row("the resolved containers (the pass's input)", f.legacy_observed, f.observed, n);
    Row("the pass's result (DesiredState)", f.legacy_state, f.state, n);
    Row("of which its classes (EnforcerStatus::classes)", f.legacy_classes, f.classes, n);
    Row("a copy of the classes (a reader's EnforcerStatusBoard::Status())", f.legacy_copy, f.copy,
        n);
  }
  return 0;
}
